"""The reference interpreter: any graph run with the ops' NumPy references."""
