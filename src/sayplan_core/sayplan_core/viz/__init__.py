"""Visualisation data for RViz, independent of ROS."""
