"""GPT-2's byte-level table, shared by the scripts that spell byte-level vocabularies
(reference/make_decode_goldens.py, fuzz/seeds.py)."""


def bytes_to_unicode():
    """GPT-2's byte -> printable-char table (what ByteLevel vocabularies are spelled in)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))
