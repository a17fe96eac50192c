"""Clients of the robot-side ROS actions a skill server drives (Nav2 and any other action server), shared by every
robot backend, the simulated one included."""
