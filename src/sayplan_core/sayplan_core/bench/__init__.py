"""Evaluation harness: run task sets with several planners, score them, write reports."""
