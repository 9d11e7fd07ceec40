"""grow-diag-final-and: one set of word links from a forward and a reverse alignment.

Koehn, Axelrod, Birch, Callison-Burch, Osborne & Talbot 2005, Edinburgh
System Description for the 2005 IWSLT Speech Translation Evaluation, and
Koehn's Moses training notes (the heuristic fast_align's atools and Moses'
symal run):

    A = forward ∩ reverse
    grow-diag: repeat until nothing is added:
        for each source word i, each target word j (in order), with (i, j) in A:
            for each of the 8 neighbours (i', j') of (i, j):
                if (i' unaligned in A or j' unaligned in A) and (i', j') in forward ∪ reverse:
                    add (i', j') to A
    final-and(forward), then final-and(reverse):
        for each source word i, each target word j (in order):
            if i and j are both unaligned in A and (i, j) in that direction's links:
                add (i, j) to A

Links are (source word, target word), both directions written source-first
(as eflomal, fast_align and GIZA++ tools write them).

Why not a package's: eflomal ships no symmetrisation (its README points
to fast_align's atools, a C++ program not on PyPI), and NLTK's
nltk.translate.gdfa.grow_diag_final_and (3.10) tests `e_new not in aligned`
against a dict keyed "e" and "f", which is always true, so it returns the
union of the two directions rather than grow-diag-final-and.
"""

NEIGHBOURS = [(-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)]


def grow_diag_final_and(forward: set, reverse: set, src_len: int, tgt_len: int) -> set[tuple[int, int]]:
    """forward, reverse: {(source word, target word)} -> the symmetrised links."""
    forward = {(i, j) for i, j in forward if 0 <= i < src_len and 0 <= j < tgt_len}
    reverse = {(i, j) for i, j in reverse if 0 <= i < src_len and 0 <= j < tgt_len}
    union = forward | reverse
    links = forward & reverse
    src_aligned = {i for i, _ in links}
    tgt_aligned = {j for _, j in links}

    def add(i: int, j: int) -> None:
        links.add((i, j))
        src_aligned.add(i)
        tgt_aligned.add(j)

    grown = True
    while grown:
        grown = False
        for i in range(src_len):
            for j in range(tgt_len):
                if (i, j) not in links:
                    continue
                for di, dj in NEIGHBOURS:
                    point = (i + di, j + dj)
                    if point in union and point not in links and (
                            point[0] not in src_aligned or point[1] not in tgt_aligned):
                        add(*point)
                        grown = True
    for direction in (forward, reverse):
        for i in range(src_len):
            for j in range(tgt_len):
                if (i, j) in direction and i not in src_aligned and j not in tgt_aligned:
                    add(i, j)
    return links
