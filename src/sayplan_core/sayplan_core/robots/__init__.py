"""What robot backends share without any SDK: where a scene-graph node is for a robot (site bindings).

Each robot's own logic (skill -> primitive programs, failure translation) lives in a module of its
own here; the SDK and ROS clients that execute those programs live in the robot's package.
"""
