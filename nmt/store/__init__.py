"""The base layer's storage: checkpoints, their averages, and the metrics log.

Training, translation and every command read and write runs through this
package; it imports nothing of theirs.
"""
