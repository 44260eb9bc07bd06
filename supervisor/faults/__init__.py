"""The fault classes a diagnosis can name, one module each: what the class is, which evidence corroborates
it, and which rules check confirms it. ``supervisor.faults.registry`` finds them all."""
