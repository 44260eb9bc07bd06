"""The source of the sandbox's functions, deployed as zip packages (never imported by the sandbox)."""
