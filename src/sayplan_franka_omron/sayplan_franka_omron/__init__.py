"""SayPlan's own robot (Rana et al. 2023, appendix I): a Franka arm on an Omron LD-60 base.

The skill logic (skill -> primitives, node -> target, result translation) is in
sayplan_core.robots; this package connects it to the robot: the ARCL link to the base,
the Nav2 client for bases that run Nav2, and the arm and gripper action clients.
"""
