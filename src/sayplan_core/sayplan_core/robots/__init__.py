"""What robot backends share without any SDK: where a scene-graph node is for a robot (site bindings).

Each robot's own logic (skill -> primitive programs, failure translation) lives in the robot's package, beside
the SDK and ROS clients that execute those programs; the core never imports a robot package.
"""
