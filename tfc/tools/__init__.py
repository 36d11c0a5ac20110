"""User tools: the tfc command line, inspect, profile, graph drawing."""
