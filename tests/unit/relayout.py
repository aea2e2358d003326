#!/usr/bin/env python3
"""Rewrites a trace's EVENTS_PACKED (format 1.4), EVENTS_GAPS (1.9) and EVENTS_BITS (1.10; 1.13: tables
carried from a thread's chunk to its next) chunks
as the 1.2 EVENTS chunks older shims wrote (column layout, file header minor 2, zstd level 1),
every other chunk as it is: the same events in the older layout, so a
reader's output can be compared across the two.

    relayout.py IN.trace.zst OUT.trace.zst

Prints {"events", "packed_chunks", "packed_bytes", "literals", "carried_chunks"} of what
it converted, and "paths_dropped": the largest count of the PATHS_DROPPED chunks
(1.12; 0 without), which it checks and keeps as they are (a payload shorter than
its u64 count: one line on stderr, exit 2). Needs the zstd command. An independent codec (Python, from
docs/trace-format.md), not the C one under test.
"""
import json, struct, subprocess, sys


def varint(buf, p):
    v = shift = 0
    while True:
        b = buf[p]
        p += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, p


def put_varint(out, v):
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def unpack_events(enc, count, base=None, table=None):
    """(dts, durs, sets): the raw dt and dur varint values of the 1.4 layout and each event's
    (api, result, stream, a0..a3). base: the chunk's base_ticks, for the 1.9 layout (EVENTS_GAPS:
    a gap column, then a byte per event of the durations' low bits and their high bits as varints),
    whose times are turned into the 1.4 values. table: the table of argument sets the chunk starts
    with (a list, appended to in place: 1.13's carried tables), else an empty one."""
    dt_bytes, dur_bytes, literals = struct.unpack_from("<III", enc, 0)
    op_at, d = 12, 12 + count
    lo = d + dt_bytes
    u = lo + count if base is not None else lo
    lit = u + dur_bytes
    prev, sets, dts, durs, seen = {}, [], [], [], 0
    table = [] if table is None else table
    start = end = base
    for i in range(count):
        op = enc[op_at + i]
        dt, d = varint(enc, d)
        dur, u = varint(enc, u)
        if base is not None:  # gap from the previous end; duration in two parts
            dur = dur << 8 | enc[lo + i]
            t = (end + ((dt >> 1) ^ -(dt & 1))) & (2**64 - 1)
            delta = (t - start + 2**63) % 2**64 - 2**63
            dt = ((delta << 1) ^ (delta >> 63)) & (2**64 - 1)
            start, end = t, (t + dur) & (2**64 - 1)
        dts.append(dt)
        durs.append(dur)
        if op:
            sets.append(table[op - 1])
            continue
        seen += 1
        api, lit = varint(enc, lit)
        mask = enc[lit]
        lit += 1
        res, stream, a = prev.get(api, (0, 0, (0, 0, 0, 0)))
        a = list(a)
        if mask & 1:
            v, lit = varint(enc, lit)
            res = (v >> 1) ^ -(v & 1)
        if mask & 2:
            v, lit = varint(enc, lit)
            stream ^= v
        for k in range(4):
            if mask & (4 << k):
                v, lit = varint(enc, lit)
                a[k] ^= v
        prev[api] = (res, stream, tuple(a))
        s = (api, res, stream) + tuple(a)
        if len(table) < 255:
            table.append(s)
        sets.append(s)
    assert seen == literals and lit == len(enc), "malformed EVENTS_PACKED chunk"
    return dts, durs, sets, literals


def tbits_times(enc, count, bits_at, bit_bytes, params):
    """The gaps and durations of an EVENTS_BITS chunk's bit column (docs/trace-format.md): per event
    the gap's code, then the duration's, least significant bit first; params: per column
    (center, k, q, shift)."""
    x = int.from_bytes(enc[bits_at:bits_at + bit_bytes], "little")
    pos = 0

    def take(n):
        nonlocal pos
        v = (x >> pos) & ((1 << n) - 1)
        pos += n
        return v

    def code(k, q):
        low = take(k)
        zeros = 0
        while take(1) == 0:
            zeros += 1
            assert zeros <= q + 32 and pos <= 8 * bit_bytes, "malformed time code"
        if zeros < q:
            return zeros << k | low
        nb = zeros - q
        if nb == 32:
            return take(64)
        y = (1 << nb) | take(nb)
        return (y + q - 1) << k | low

    out = []
    for _ in range(count):
        vals = []
        for center, k, q, shift in params:
            r = code(k, q)
            e = (r >> 1) ^ -(r & 1)
            vals.append((center + (e << shift)) % 2**64)
        out.append(vals)
    assert pos <= 8 * bit_bytes and (pos + 7) // 8 == bit_bytes, "the bit column does not end with its events"
    return out


def unpack_tbits(enc, count, base, tid, slots):
    """unpack_events for the 1.10 layout (EVENTS_BITS): a 32-byte directory, the op column, the bit
    column, the literals; the times turned into the 1.4 values. slots: tid % 16 -> (tid, table), the
    table the last EVENTS_BITS chunk in that slot ended with, which a chunk whose directory's last
    u16 is 1 (1.13) starts with (a reader that checks frames is the C one: this one trusts the
    writer that it is of the same frame)."""
    bit_bytes, literals, gc, dc, gk, gs, dk, ds, gq, dq, reserved = struct.unpack_from("<IIqQBBBBBBH", enc, 0)
    assert gk <= 32 and dk <= 32 and gq <= 32 and dq <= 32 and reserved in (0, 1), "bad EVENTS_BITS parameters"
    if reserved:
        held = slots.get(tid % 16)
        assert held is not None and held[0] == tid, "a carried table its slot does not hold"
        table = held[1]
    else:
        table = []
        slots[tid % 16] = (tid, table)
    ops_at = 32
    bits_at = ops_at + count
    times = tbits_times(enc, count, bits_at, bit_bytes, ((gc % 2**64, gk, gq, gs), (dc, dk, dq, ds)))
    # the rest as EVENTS_PACKED: rebuild a 1.4 directory around the same op and literal columns
    dts, durs = bytearray(), bytearray()
    start = end = base
    for gap, dur in times:
        t = (end + gap) % 2**64
        delta = (t - start + 2**63) % 2**64 - 2**63
        put_varint(dts, ((delta << 1) ^ (delta >> 63)) & (2**64 - 1))
        put_varint(durs, dur)
        start, end = t, (t + dur) % 2**64
    packed = (struct.pack("<III", len(dts), len(durs), literals) + enc[ops_at:bits_at] + dts + durs +
              enc[bits_at + bit_bytes:])
    return unpack_events(packed, count, table=table)


def encode_columns(dts, durs, sets):
    """The 1.2 column encoding of the same events (docs/trace-format.md, EVENTS)."""
    api_c, mask_c, dt_c, dur_c, fld_c = bytearray(), bytearray(), bytearray(), bytearray(), bytearray()
    prev = {}
    for dt, dur, s in zip(dts, durs, sets):
        api, res, stream, a = s[0], s[1], s[2], s[3:]
        p = prev.get(api, (0, 0, (0, 0, 0, 0)))
        mask = 0
        if res != p[0]:
            mask |= 1
            put_varint(fld_c, ((res << 1) ^ (res >> 63)) & (2**64 - 1))
        if stream != p[1]:
            mask |= 2
            put_varint(fld_c, stream ^ p[1])
        for k in range(4):
            if a[k] != p[2][k]:
                mask |= 4 << k
                put_varint(fld_c, a[k] ^ p[2][k])
        prev[api] = (res, stream, tuple(a))
        put_varint(api_c, api)
        mask_c.append(mask)
        put_varint(dt_c, dt)
        put_varint(dur_c, dur)
    return struct.pack("<III", len(api_c), len(dt_c), len(dur_c)) + api_c + mask_c + dt_c + dur_c + fld_c


def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = subprocess.run(["zstd", "-dcq", src], capture_output=True).stdout  # a cut file: what came out
    out = bytearray(data[:32])
    struct.pack_into("<H", out, 14, 2)
    pos = struct.unpack_from("<I", data, 16)[0]
    out += data[32:pos]
    stats = {"events": 0, "packed_chunks": 0, "packed_bytes": 0, "literals": 0, "paths_dropped": 0,
             "carried_chunks": 0}
    slots = {}
    while pos + 8 <= len(data):
        ctype, size = struct.unpack_from("<II", data, pos)
        payload = data[pos + 8:pos + 8 + size]
        if len(payload) < size:
            out += data[pos:]  # cut short: keep the cut as it was
            break
        if ctype == 17:  # PATHS_DROPPED (1.12): u64 strings dropped so far; a longer payload's rest is skipped
            if size < 8:
                sys.stderr.write(f"relayout.py: {src}: corrupt chunk at byte {pos}: PATHS_DROPPED payload too "
                                 f"small ({size} bytes)\n")
                sys.exit(2)
            stats["paths_dropped"] = max(stats["paths_dropped"], struct.unpack_from("<Q", payload)[0])
        if ctype in (13, 15, 16):
            tid, count, base, dropped, enc_size, res = struct.unpack_from("<IIQQII", payload)
            if ctype == 16:
                stats["carried_chunks"] += struct.unpack_from("<H", payload, 32 + 30)[0] & 1
                dts, durs, sets, lits = unpack_tbits(payload[32:32 + enc_size], count, base, tid, slots)
            else:
                dts, durs, sets, lits = unpack_events(payload[32:32 + enc_size], count,
                                                      base if ctype == 15 else None)
            enc = encode_columns(dts, durs, sets)
            payload = struct.pack("<IIQQII", tid, count, base, dropped, len(enc), res) + enc
            ctype = 4
            stats["events"] += count
            stats["packed_chunks"] += 1
            stats["packed_bytes"] += size
            stats["literals"] += lits
        out += struct.pack("<II", ctype, len(payload)) + payload
        pos += 8 + size
    z = subprocess.run(["zstd", "-q", "-1", "-c"], input=bytes(out), capture_output=True, check=True).stdout
    with open(dst, "wb") as f:
        f.write(z)
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
