"""Thin rclpy nodes that expose sayplan_core over ROS 2."""
