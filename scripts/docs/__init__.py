"""The docs build: pages and pictures generated from the code and from trained models; run as `python -m scripts.docs.NAME`."""
