"""Executing plans: the closed loop (plan, run skills, replan on failure) and a simulated world."""
