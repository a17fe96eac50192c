"""SayPlan's own robot (Rana et al. 2023, appendix I): a Franka arm on an Omron LD-60 base.

The ROS-free skill logic is here beside the node: `programs` (skill -> primitives), `motions` (taught motions,
the arm and gripper results), `arcl` (the base's text protocol); what robots share (node -> target, Nav2 codes) is in
sayplan_core.robots. The node connects it to the robot: the ARCL link to the base, the Nav2 client for bases that
run Nav2, and the arm and gripper action clients.
"""
