"""The reference core: each mechanism's plain version (it imports torch, nothing else of nmt)."""
