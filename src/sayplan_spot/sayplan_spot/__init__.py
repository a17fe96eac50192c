"""Robot `spot`: a Boston Dynamics Spot with an arm, driven through bosdyn-client (the optional `spot` extra)."""
