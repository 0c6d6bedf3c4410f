"""``vramfit.plan``: "does it fit, and how should it run?", as ``vramfit plan --format json`` answers it.

The plan prices only through :meth:`Coefficients.reserve`, by search over
batch sizes and tiles, never by re-deriving a line's formula, as the CLI's
planner does (docs/plan.md): whatever rule prices the query, the plan
agrees with ``reserve``. Every search relies on prices never falling as a
batch or a tile grows (the monotone composition).
"""

from . import _generated as _g

#: Tile edges a search tries: multiples of this many pixels, and the coefficients' own tiles.
TILE_SEARCH_STEP = 64
#: How many tiles below a legacy-floor answer a search prices to find one priced by a line.
LEGACY_WINDOW = 64
_MIB = 1 << 20
_RULE_WORDS = _g.RULE_TEXT


def _mib(b):
    return "%d MiB" % -(-b // _MIB)


def _spatial_of(r):
    return r.video["tile"] if r.video else r.line.tile


def _temporal_of(r):
    return r.video["temporal_tile"] if r.video and r.video["walk"] != "causal" else None


def by_legacy(r):
    rule = r.lifted["rule"] if r.lifted else r.rule
    return rule in ("legacy-floor", "legacy")


def estimates(r):
    """Why this answer is an estimate (what ``--strict`` refuses); the CLI's words."""
    out = []
    if r.lifted:
        l = r.lifted
        measured = l["rule"] in ("fitted-line", "carried-line", "any-os-line")
        if not measured or l["extrapolated"]:
            out.append("%s takes the price of a smaller request (%dx%d, tile %d) set by the %s%s" % (
                r.line, l["width"], l["height"], l["tile"], _RULE_WORDS.get(l["rule"], l["rule"]),
                " outside its line's measured range" if l["extrapolated"] else ""))
        return out
    rule = r.rule
    if rule in ("unmeasured-rule", "legacy-floor"):
        out.append("%s is priced by the %s: no line was measured for it" % (r.line, _RULE_WORDS[rule]))
    elif rule == "attention-phase":
        out.append("%s is priced by the attention phase: a declared bytes-per-score figure, not a measured decode"
                   % r.line)
    elif rule == "measured-cap":
        out.append("%s has no line of its own: priced by its platform's line of a larger tile (or of no tile)"
                   % r.line)
    elif rule == "derived-tile":
        out.append("%s has no line of its own: priced by the derived tile rule from its untiled line" % r.line)
    elif rule == "legacy":
        out.append("%s is priced by the legacy estimator" % r.line)
    elif rule == "video-estimate":
        out.append("%s is priced by a host's published video estimate: no line was measured for it" % r.line)
    elif rule == "traced":
        out.append("%s is priced by the traced rule: its architecture's trace scaled by other families' "
                   "measurements, no line was measured for it on this platform" % r.line)
    if r.extrapolated:
        out.append("%d px lies outside the measured range of the line that priced it" % r.pixels)
    return out


def _step(role, batch, r, budget):
    out = {"role": role, "batch": batch, "tile": _spatial_of(r)}
    if _temporal_of(r) is not None:
        out["temporal_tile"] = _temporal_of(r)
    out.update({
        "bytes": r.bytes,
        "fits": r.bytes <= budget,
        "rule": r.rule,
        "line": r.line.to_dict(),
        "priced_by": r.priced_by.to_dict() if r.priced_by else None,
        "extrapolated": r.extrapolated,
        "warnings": list(r.warnings),
        "estimates": estimates(r),
    })
    return out


def _each_once(messages):
    out = []
    for m in messages:
        if m not in out:
            out.append(m)
    return out


def _groups(n, g):
    g = max(g, 1)
    count = -(-n // g)

    def at(i):
        return [i * g, min((i + 1) * g, n)]
    if count == 0:
        return []
    if count == 1:
        return [at(0)]
    return [at(0), at(count - 1)]


class _Tiles:
    """Every tile a search tries, largest first: the multiples of 64 px and the coefficients' own tiles, each
    smaller than ``below`` and than the image's longer side; held as that rule and bisected."""

    def __init__(self, width, height, below, known):
        longest = max(width, height)
        limit = longest if below is None else min(below, longest)
        self.steps = min(max(limit - 1, 0) // TILE_SEARCH_STEP, (2 ** 32 - 1) // TILE_SEARCH_STEP)
        self.known = sorted({t for t in known if 0 < t < limit and t % TILE_SEARCH_STEP != 0})

    def __len__(self):
        return self.steps + len(self.known)

    @staticmethod
    def multiple(i):
        return min(i * TILE_SEARCH_STEP, 2 ** 32 - 1)

    def smallest(self):
        found = [t for t in (self.multiple(1) if self.steps > 0 else None,
                             self.known[0] if self.known else None) if t is not None]
        return min(found) if found else None

    def above(self, t):
        i = t // TILE_SEARCH_STEP + 1
        found = [x for x in (self.multiple(i) if i <= self.steps else None,
                             next((k for k in self.known if k > t), None)) if x is not None]
        return min(found) if found else None

    def below(self, t):
        while True:
            i = min(max(t - 1, 0) // TILE_SEARCH_STEP, self.steps)
            found = [x for x in (self.multiple(i) if i >= 1 else None,
                                 next((k for k in reversed(self.known) if k < t), None)) if x is not None]
            if not found:
                return
            t = max(found)
            yield t

    def largest(self, fits):
        lo, hi = 0, self.steps
        while lo < hi:
            mid = lo + -(-(hi - lo) // 2)
            if fits(self.multiple(mid)):
                lo = mid
            else:
                hi = mid - 1
        best = self.multiple(lo) if lo > 0 else None
        for k in reversed(self.known):
            if best is not None and k <= best:
                continue
            if fits(k):
                best = k
                break
        return best


def _largest_tile(price, width, height, budget, below, known):
    candidates = _Tiles(width, height, below, known)

    def fits(r):
        return r.bytes <= budget and not (r.attention and r.attention["wrong_output"])
    t = candidates.largest(lambda t: fits(price(t)))
    found = price(t) if t is not None else None
    chosen, skipped = found, None
    if found is not None and by_legacy(found):
        for n, t in enumerate(candidates.below(_spatial_of(found))):
            if n >= LEGACY_WINDOW:
                break
            p = price(t)
            if fits(p) and not by_legacy(p):
                skipped, chosen = found, p
                break
    next_larger = None
    if chosen is not None:
        a = candidates.above(_spatial_of(chosen))
        if a is not None:
            p = price(a)
            next_larger = None if fits(p) else p
    reasons = []
    if chosen is not None:
        reasons.append("tile %d is the largest of %d tile edges searched (multiples of %d px and the measured tiles)"
                       " whose price fits: %s ≤ budget %s, by the %s" % (
                           _spatial_of(chosen), len(candidates), TILE_SEARCH_STEP, _mib(chosen.bytes), _mib(budget),
                           _RULE_WORDS[chosen.rule]))
        if next_larger is not None:
            a = next_larger.attention
            if a and a["wrong_output"]:
                reasons.append("tile %d: one attention matrix has %d² elements, past the %s limit where SDPA returns "
                               "wrong output" % (_spatial_of(next_larger), a["sequence"],
                                                 next_larger.line.conv_backend))
            else:
                reasons.append("tile %d reserves %s > budget" % (_spatial_of(next_larger), _mib(next_larger.bytes)))
        if skipped is not None:
            reasons.append("tile %d fits only by the legacy floor's guess (%s): passed over for a measured or derived "
                           "price" % (_spatial_of(skipped), _mib(skipped.bytes)))
    else:
        s = candidates.smallest()
        if s is None:
            reasons.append("no tile is smaller than the image")
        else:
            p = price(s)
            reasons.append("no tile fits: even tile %d reserves %s > budget %s" % (
                _spatial_of(p), _mib(p.bytes), _mib(budget)))
    return chosen, next_larger, skipped, reasons


def _pair(spatial, temporal):
    s = "untiled" if spatial == 0 else "%d px" % spatial
    t = "all frames" if temporal == 0 else "%d frames" % temporal
    return "tile %s × %s" % (s, t)


def _temporal_candidates(v):
    if v["walk"] != "tiles":
        return [0]
    step = max(v["temporal_compression"], 1)
    ceiling = v["frames"] if v["temporal_tile"] == 0 else v["temporal_tile"]
    out = []
    t = step
    while t < v["frames"] and t <= ceiling and t <= 2 ** 32 - 1:
        out.append(t)
        t *= 2
    if v["temporal_tile"] == 0:
        out.append(0)
    out.reverse()
    return out


def _largest_tiles(price_pair, width, height, budget, asked, known):
    below = asked["tile"] if asked["tile"] != 0 else None
    spatial = _Tiles(width, height, below, known)
    temporal = _temporal_candidates(asked)

    def price(s, t):
        return price_pair(s, t if asked["walk"] == "tiles" else None)

    def fits(r):
        return r.bytes <= budget
    asked_pair = (asked["tile"], asked["temporal_tile"])
    best_each, searched = [], 0
    for t in temporal:
        untiled = asked["tile"] == 0 and (0, t) != asked_pair
        searched += len(spatial) + (1 if untiled else 0)
        whole = None
        if untiled:
            p = price(0, t)
            whole = p if fits(p) else None
        if whole is not None:
            best_each.append(whole)
        else:
            s = spatial.largest(lambda s: fits(price(s, t)))
            if s is not None:
                best_each.append(price(s, t))

    def work(r):
        return r.video["working_set"] if r.video else 0

    def order(r):
        return (-work(r), -_spatial_of(r), -(_temporal_of(r) if _temporal_of(r) is not None else -1))
    best_each.sort(key=order)
    found = best_each[0] if best_each else None
    chosen = next((p for p in best_each if not by_legacy(p)), None)
    if chosen is None:
        priced = []
        for p in best_each:
            t = _temporal_of(p) or 0
            for n, s in enumerate(spatial.below(_spatial_of(p))):
                if n >= LEGACY_WINDOW:
                    break
                c = price(s, t)
                if fits(c) and not by_legacy(c):
                    priced.append(c)
                    break
        priced.sort(key=order)
        chosen = priced[0] if priced else None
    skipped = found if chosen is not None and found is not None and chosen.to_dict() != found.to_dict() else None
    chosen = chosen if chosen is not None else found
    next_larger = None
    if chosen is not None and _spatial_of(chosen) != 0:
        a = spatial.above(_spatial_of(chosen))
        if a is not None:
            p = price(a, _temporal_of(chosen) or 0)
            next_larger = None if fits(p) else p

    def name(r):
        return _pair(_spatial_of(r), _temporal_of(r) or 0)
    reasons = []
    if chosen is not None:
        reasons.append("%s is the largest working set (%d px) of %d spatial × temporal tile pairs searched (spatial "
                       "multiples of %d px and the measured tiles; temporal steps of %d frames) whose price fits: %s ≤ "
                       "budget %s, by the %s" % (name(chosen), work(chosen), searched, TILE_SEARCH_STEP,
                                                 asked["temporal_compression"], _mib(chosen.bytes), _mib(budget),
                                                 _RULE_WORDS[chosen.rule]))
        if next_larger is not None:
            reasons.append("%s reserves %s > budget" % (name(next_larger), _mib(next_larger.bytes)))
        if skipped is not None:
            reasons.append("%s fits only by the legacy floor's guess (%s): passed over for a measured or estimated "
                           "price" % (name(skipped), _mib(skipped.bytes)))
    else:
        t = temporal[-1] if temporal else 0
        s = spatial.smallest()
        if s is None:
            reasons.append("no smaller tile pair to try")
        else:
            p = price(s, t)
            reasons.append("no tile pair fits: even %s reserves %s > budget %s" % (name(p), _mib(p.bytes),
                                                                                  _mib(budget)))
    return chosen, next_larger, skipped, reasons


def plan_vae(c, model, op, width, height, budget_terms, *, batch=1, tile=0, temporal_tile=None, frames=1, **query):
    """The plan of ``batch`` items of one VAE query under ``budget_terms`` (bytes, from, free, share, cap)."""
    budget = budget_terms["bytes"]
    n = batch

    def price(b, t, tt=temporal_tile):
        return c.reserve(model, op, width, height, batch=b, tile=t, temporal_tile=tt, frames=frames, **query)
    steps = []
    every = price(n, tile)
    own_tile = _spatial_of(every)
    own = own_tile if own_tile != 0 else None
    steps.append(_step("all", n, every, budget))
    one = every if n == 1 else price(1, own_tile)

    def per_item(one):
        return max(price(2, own_tile).bytes - one.bytes, 0) if n > 1 else one.bytes

    def finish(verdict, g):
        p = {
            "workload": "vae", "verdict": verdict, "budget_bytes": budget, "budget_from": budget_terms["from"],
            "budget": dict(budget_terms), "items": n, "group_size": g,
            "groups": None if g is None else -(-n // g),
            "boundaries": [] if g is None else _groups(n, g),
            "peak_bytes": None, "tile": None, "temporal_tile": None, "per_item_bytes": None,
            "subchunk_frames": None, "transient_verdict": None, "reasons": [], "steps": [], "warnings": [],
        }
        return p

    def done(p, steps):
        p["warnings"] = _each_once(w for s in steps for w in s["warnings"])
        p["steps"] = steps
        if p["temporal_tile"] is None:
            del p["temporal_tile"]
        return p

    def wrong(r):
        return bool(r.attention and r.attention["wrong_output"])

    def tiled_or_host(reasons, steps):
        probe = price(1, tile)
        known = c.data.get("tiles", [])
        if probe.video:
            chosen, next_larger, skipped, found = _largest_tiles(
                lambda s, t: price(1, s, t), width, height, budget, probe.video, known)
        else:
            chosen, next_larger, skipped, found = _largest_tile(
                lambda t: price(1, t), width, height, budget, own_tile if own_tile != 0 else None, known)
        for considered in (next_larger, skipped):
            if considered is not None:
                steps.append(_step("tile", 1, considered, budget))
        reasons = reasons + found
        if chosen is not None:
            steps.append(_step("tile", 1, chosen, budget))
            p = finish("tiled", 1)
            p["tile"] = _spatial_of(chosen)
            p["temporal_tile"] = _temporal_of(chosen)
            p["peak_bytes"] = chosen.bytes
        else:
            reasons.append("nothing fits on the device: run on the host")
            p = finish("host", None)
        p["reasons"] = reasons
        return done(p, steps)

    if wrong(every):
        reasons = ["%sone attention matrix has %d² elements, past the %s limit where SDPA returns wrong output: tiled"
                   % ("untiled, " if own_tile == 0 else "", every.attention["sequence"], every.line.conv_backend)]
        return tiled_or_host(reasons, steps)
    if every.bytes <= budget:
        p = finish("full" if own is None else "tiled", n)
        p["tile"] = own
        p["temporal_tile"] = _temporal_of(every)
        p["peak_bytes"] = every.bytes
        p["per_item_bytes"] = per_item(one)
        p["reasons"].append("all %d item(s) reserve %s ≤ budget %s" % (n, _mib(every.bytes), _mib(budget)))
        return done(p, steps)
    if one.bytes <= budget:
        steps.append(_step("one", 1, one, budget))
        lo, hi = 1, n - 1
        while lo < hi:
            mid = lo + -(-(hi - lo) // 2)
            if price(mid, own_tile).bytes <= budget:
                lo = mid
            else:
                hi = mid - 1
        largest = lo
        passes = -(-n // largest)
        g = -(-n // passes)
        group = price(g, own_tile)
        if g > 1:
            steps.append(_step("group", g, group, budget))
        steps.append(_step("next-group", largest + 1, price(largest + 1, own_tile), budget))
        p = finish("chunked" if own is None else "tiled", g)
        p["tile"] = own
        p["temporal_tile"] = _temporal_of(every)
        p["peak_bytes"] = group.bytes
        p["per_item_bytes"] = per_item(one)
        p["reasons"].append("all %d reserve %s > budget %s; groups of %d reserve %s"
                            % (n, _mib(every.bytes), _mib(budget), g, _mib(group.bytes)))
        if g < largest:
            p["reasons"].append("groups of up to %d fit, in %d passes; %d groups of at most %d is the fewest passes at "
                                "the lowest peak (%s instead of %s)" % (
                                    largest, passes, passes, g, _mib(group.bytes),
                                    _mib(price(largest, own_tile).bytes)))
        return done(p, steps)
    if n > 1:
        steps.append(_step("one", 1, one, budget))
    return tiled_or_host(["one item reserves %s > budget %s" % (_mib(one.bytes), _mib(budget))], steps)

