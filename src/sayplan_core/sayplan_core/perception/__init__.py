"""Perception: build and update the scene graph from RGB-D detections (ConceptGraphs-style fusion)."""
