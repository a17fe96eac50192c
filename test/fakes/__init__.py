"""Test fakes of things outside this project, each speaking the real protocol at its boundary."""
