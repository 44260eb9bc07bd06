"""The embedded AWS sandbox: moto in server mode with IAM enforcement, provisioned with one world."""
