"""SSH public keys: the ones a user keeps in their profile, parsed and checked (keys.py), and the
rules of who sees and changes them (service.py)."""
