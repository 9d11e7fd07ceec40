"""Side-by-side comparisons with peer toolkits (CTranslate2, eole, JoeyNMT) on the same machine; run as `python -m scripts.peers.NAME`."""
