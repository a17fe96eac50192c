"""ROS-free core of the SayPlan stack: scene graphs, simulator, path planning, planners."""

__version__ = "0.1.0"
