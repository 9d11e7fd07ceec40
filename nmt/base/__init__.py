"""The base helpers every layer above may use, standard library only unless a
module says otherwise: errors (`NmtError`), atomic writes, the files a command
may read and write, stop signals, the shared command-line runner and checks,
provenance, the device, scores and memory sizes."""
