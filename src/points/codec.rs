//! One stored point ⇄ its line of the store, by hand.
//!
//! The store is read and written by every command; at 10^6 points serde's
//! generic path (a visitor per field, a re-serialisation per line to prove
//! the line canonical) was most of a command's time. This codec writes the
//! exact bytes `serde_json` writes for a [`Point`] and reads back only lines
//! in that exact form: a line it reads is canonical by construction. A line
//! it does not read (an escaped string, a hand edit, an alias) is handed to
//! the serde path, which either accepts it as canonical or names the field
//! that is wrong, so the two paths cannot disagree about what is accepted
//! (`tests` below and `tests/store_codec.rs` check both directions).

use super::row::Interners;
use super::{LineKey, Point};
use crate::text::Text;
use crate::vocab::{Aggregate, Allocator, Context, ConvBackend, Dtype, Op, Os};

/// Appends the point's canonical line (without the trailing comma).
pub fn write_point(out: &mut Vec<u8>, p: &Point) {
    let k = &p.key;
    out.extend_from_slice(b"{\"id\":");
    string(out, &p.id);
    out.extend_from_slice(b",\"vae\":");
    string(out, &k.vae);
    out.extend_from_slice(b",\"op\":\"");
    out.extend_from_slice(k.op.as_str().as_bytes());
    out.extend_from_slice(b"\",\"tile\":");
    write_u64(out, u64::from(k.tile));
    if let Some(t) = k.temporal_tile {
        out.extend_from_slice(b",\"temporal_tile\":");
        write_u64(out, u64::from(t));
    }
    out.extend_from_slice(b",\"conv_backend\":\"");
    out.extend_from_slice(k.conv_backend.as_str().as_bytes());
    out.extend_from_slice(b"\",\"allocator\":\"");
    out.extend_from_slice(k.allocator.as_str().as_bytes());
    out.extend_from_slice(b"\",\"os\":\"");
    out.extend_from_slice(k.os.as_str().as_bytes());
    out.extend_from_slice(b"\",\"dtype\":\"");
    out.extend_from_slice(k.dtype.as_str().as_bytes());
    out.extend_from_slice(b"\",\"model\":");
    opt(out, p.model.as_deref(), string);
    out.extend_from_slice(b",\"loaded_dtype\":");
    opt(out, p.loaded_dtype.map(|d| d.as_str()), string);
    for (name, v) in [(&b",\"width\":"[..], p.width), (b",\"height\":", p.height)] {
        out.extend_from_slice(name);
        write_u64(out, v);
    }
    if p.frames != 1 {
        out.extend_from_slice(b",\"frames\":");
        write_u64(out, p.frames);
    }
    for (name, v) in
        [(&b",\"batch\":"[..], p.batch), (b",\"pixels\":", p.pixels), (b",\"demand_bytes\":", p.demand_bytes)]
    {
        out.extend_from_slice(name);
        write_u64(out, v);
    }
    for (name, v) in [
        (&b",\"reserved_bytes\":"[..], p.reserved_bytes),
        (b",\"allocated_bytes\":", p.allocated_bytes),
        (b",\"driver_bytes\":", p.driver_bytes),
    ] {
        out.extend_from_slice(name);
        opt(out, v, write_u64);
    }
    out.extend_from_slice(b",\"source\":");
    string(out, &p.source);
    out.extend_from_slice(b",\"device\":");
    opt(out, p.device.as_deref(), string);
    out.extend_from_slice(b",\"torch\":");
    opt(out, p.torch.as_deref(), string);
    out.extend_from_slice(b",\"run\":");
    opt(out, p.run.map(u64::from), write_u64);
    out.extend_from_slice(b",\"runs\":");
    opt(out, p.runs.map(u64::from), write_u64);
    out.extend_from_slice(b",\"aggregate\":");
    opt(out, p.aggregate.map(|a| a.as_str()), string);
    out.extend_from_slice(b",\"context\":");
    opt(out, p.context.map(|c| c.as_str()), string);
    out.extend_from_slice(b",\"note\":");
    opt(out, p.note.as_deref(), string);
    out.extend_from_slice(b",\"metadata\":{");
    for (i, (k, v)) in p.metadata.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(out, k);
        out.push(b':');
        string(out, v);
    }
    out.extend_from_slice(b"}}");
}

fn opt<T>(out: &mut Vec<u8>, v: Option<T>, write: fn(&mut Vec<u8>, T)) {
    match v {
        Some(v) => write(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

/// Whether a string is written as it is between quotes (serde_json escapes
/// only `"`, `\` and the control characters below U+0020).
fn plain(s: &[u8]) -> bool {
    // A fold without an early exit, which the compiler runs 32 bytes at a time.
    !s.iter().fold(false, |any, b| any | (*b < 0x20) | (*b == b'"') | (*b == b'\\'))
}

fn string(out: &mut Vec<u8>, s: &str) {
    if plain(s.as_bytes()) {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Escapes are rare; serde_json writes them, so they match exactly.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// Appends `n` in decimal (what `{n}` formats, without the formatter).
pub fn write_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Reads a line in exactly the form [`write_point`] writes, or `None`.
pub fn read_point(line: &str, texts: &mut Interners) -> Option<Point> {
    let mut c = Cursor { text: line, s: line.as_bytes(), at: 0 };
    c.lit(b"{\"id\":")?;
    let id = Text::from(c.string()?);
    c.lit(b",\"vae\":")?;
    let vae = texts.vae.intern(c.string()?);
    c.lit(b",\"op\":")?;
    let op = c.vocab(Op::ALL, Op::as_str)?;
    c.lit(b",\"tile\":")?;
    let tile = u32::try_from(c.number()?).ok()?;
    let temporal_tile = match c.maybe(b",\"temporal_tile\":") {
        true => Some(u32::try_from(c.number()?).ok()?),
        false => None,
    };
    c.lit(b",\"conv_backend\":")?;
    let conv_backend = c.vocab(ConvBackend::ALL, ConvBackend::as_str)?;
    c.lit(b",\"allocator\":")?;
    let allocator = c.vocab(Allocator::ALL, Allocator::as_str)?;
    c.lit(b",\"os\":")?;
    let os = c.vocab(Os::ALL, Os::as_str)?;
    c.lit(b",\"dtype\":")?;
    let dtype = c.vocab(Dtype::ALL, Dtype::as_str)?;
    c.lit(b",\"model\":")?;
    let model = c.opt(|c| c.string())?.map(|m| texts.model.intern(m));
    c.lit(b",\"loaded_dtype\":")?;
    let loaded_dtype = c.opt(|c| c.vocab(Dtype::ALL, Dtype::as_str))?;
    let mut sizes = [0u64; 5];
    c.lit(b",\"width\":")?;
    sizes[0] = c.number()?;
    c.lit(b",\"height\":")?;
    sizes[1] = c.number()?;
    // Written only when not 1: a stored 1 is not canonical.
    let frames = match c.maybe(b",\"frames\":") {
        true => Some(c.number()?).filter(|f| *f != 1)?,
        false => 1,
    };
    c.lit(b",\"batch\":")?;
    sizes[2] = c.number()?;
    c.lit(b",\"pixels\":")?;
    sizes[3] = c.number()?;
    c.lit(b",\"demand_bytes\":")?;
    sizes[4] = c.number()?;
    let mut deltas = [None; 3];
    c.lit(b",\"reserved_bytes\":")?;
    deltas[0] = c.opt(Cursor::number)?;
    c.lit(b",\"allocated_bytes\":")?;
    deltas[1] = c.opt(Cursor::number)?;
    c.lit(b",\"driver_bytes\":")?;
    deltas[2] = c.opt(Cursor::number)?;
    c.lit(b",\"source\":")?;
    let source = texts.source.intern(c.string()?);
    c.lit(b",\"device\":")?;
    let device = c.opt(|c| c.string())?.map(|d| texts.device.intern(d));
    c.lit(b",\"torch\":")?;
    let torch = c.opt(|c| c.string())?.map(|t| texts.torch.intern(t));
    c.lit(b",\"run\":")?;
    let run = c.opt(Cursor::number)?.map(u32::try_from).transpose().ok()?;
    c.lit(b",\"runs\":")?;
    let runs = c.opt(Cursor::number)?.map(u32::try_from).transpose().ok()?;
    c.lit(b",\"aggregate\":")?;
    let aggregate = c.opt(|c| c.vocab(Aggregate::ALL, Aggregate::as_str))?;
    c.lit(b",\"context\":")?;
    let context = c.opt(|c| c.vocab(Context::ALL, Context::as_str))?;
    c.lit(b",\"note\":")?;
    let note = c.opt(|c| c.string())?.map(|n| texts.note.intern(n));
    c.lit(b",\"metadata\":{")?;
    let metadata = c.metadata(texts)?;
    c.lit(b"}}")?;
    if c.at != c.s.len() {
        return None;
    }
    let [width, height, batch, pixels, demand_bytes] = sizes;
    Some(Point {
        id,
        key: LineKey { vae, op, tile, temporal_tile, conv_backend, allocator, os, dtype },
        model,
        loaded_dtype,
        width,
        height,
        frames,
        batch,
        pixels,
        demand_bytes,
        reserved_bytes: deltas[0],
        allocated_bytes: deltas[1],
        driver_bytes: deltas[2],
        source,
        device,
        torch,
        run,
        runs,
        aggregate,
        context,
        note,
        metadata,
    })
}

struct Cursor<'a> {
    text: &'a str,
    s: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    /// A fixed byte string; its length is a constant, so the comparison
    /// compiles to a few word compares instead of a `memcmp` call.
    /// Steps over `l` when the text continues with it.
    fn maybe<const N: usize>(&mut self, l: &[u8; N]) -> bool {
        let found = self.s[self.at..].starts_with(l);
        if found {
            self.at += N;
        }
        found
    }

    fn lit<const N: usize>(&mut self, l: &[u8; N]) -> Option<()> {
        let end = self.at + N;
        let got: &[u8; N] = self.s.get(self.at..end)?.try_into().ok()?;
        (got == l).then(|| self.at = end)
    }

    /// A string with nothing to unescape (anything else is left to serde).
    fn string(&mut self) -> Option<&'a str> {
        self.lit(b"\"")?;
        let start = self.at;
        for (i, b) in self.s[start..].iter().enumerate() {
            match *b {
                b'"' => {
                    self.at = start + i + 1;
                    // Both ends are ASCII quotes, so the slice is whole characters.
                    return self.text.get(start..start + i);
                }
                b'\\' | 0..=0x1f => return None,
                _ => {}
            }
        }
        None
    }

    /// A decimal without sign, leading zero or overflow.
    fn number(&mut self) -> Option<u64> {
        let len = self.s[self.at..].iter().position(|b| !b.is_ascii_digit()).unwrap_or(self.s.len() - self.at);
        let digits = &self.s[self.at..self.at + len];
        if digits.is_empty() || (digits[0] == b'0' && len > 1) {
            return None;
        }
        let mut n: u64 = 0;
        for d in digits {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        }
        self.at += len;
        Some(n)
    }

    fn vocab<T: Copy>(&mut self, all: &[T], name: fn(&T) -> &'static str) -> Option<T> {
        let s = self.string()?;
        all.iter().find(|v| name(v) == s).copied()
    }

    fn opt<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.lit(b"null").is_some() {
            return Some(None);
        }
        read(self).map(Some)
    }

    /// The pairs of a metadata object up to its closing brace (not
    /// consumed), keys strictly increasing as a `BTreeMap` writes them.
    fn metadata(&mut self, texts: &mut Interners) -> Option<super::Metadata> {
        let mut out = Vec::new();
        if self.s.get(self.at) == Some(&b'}') {
            return Some(super::Metadata::default());
        }
        let mut last: Option<&str> = None;
        loop {
            let k = self.string()?;
            self.lit(b":")?;
            let v = self.string()?;
            if last.is_some_and(|l| l >= k) {
                return None;
            }
            last = Some(k);
            out.push((Text::from(k), texts.metadata.intern(v)));
            if self.lit(b",").is_none() {
                return Some(super::Metadata::interned(out, &mut texts.metadata_names));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point() -> Point {
        Point {
            id: "p-1".into(),
            key: LineKey {
                vae: Text::from("sdxl"),
                op: Op::Encode,
                tile: 512,
                temporal_tile: None,
                conv_backend: ConvBackend::Miopen,
                allocator: Allocator::CudaMallocAsync,
                os: Os::Windows,
                dtype: Dtype::Bf16,
            },
            model: Some("sdxl-turbo".into()),
            loaded_dtype: Some(Dtype::Fp32),
            width: 1024,
            height: 768,
            frames: 1,
            batch: 2,
            pixels: 1_572_864,
            demand_bytes: 18_446_744_073_709_551_615,
            reserved_bytes: Some(10),
            allocated_bytes: None,
            driver_bytes: Some(18_446_744_073_709_551_615),
            source: "https://example.org/x?a=1&b=ü".into(),
            device: None,
            torch: Some("2.5.1+rocm6.2".into()),
            run: Some(2),
            runs: None,
            aggregate: Some(Aggregate::Max),
            context: Some(Context::Generation),
            note: Some("tab\there \"quoted\" \\ done".into()),
            metadata: [("a".to_string(), "1".to_string()), ("b/c".to_string(), "x y".to_string())].into(),
        }
    }

    #[test]
    fn writes_what_serde_writes_and_reads_back_what_it_writes() {
        let mut p = point();
        let mut out = Vec::new();
        write_point(&mut out, &p);
        assert_eq!(String::from_utf8(out.clone()).unwrap(), serde_json::to_string(&p).unwrap());
        // An escaped note is left to serde; without it the line reads back.
        assert_eq!(read_point(std::str::from_utf8(&out).unwrap(), &mut Interners::default()), None);
        p.note = Some("plain".into());
        out.clear();
        write_point(&mut out, &p);
        assert_eq!(String::from_utf8(out.clone()).unwrap(), serde_json::to_string(&p).unwrap());
        assert_eq!(read_point(std::str::from_utf8(&out).unwrap(), &mut Interners::default()), Some(p));
    }

    #[test]
    fn refuses_every_form_it_does_not_write() {
        let mut p = point();
        p.note = None;
        let mut out = Vec::new();
        write_point(&mut out, &p);
        let line = String::from_utf8(out).unwrap();
        for (from, to) in [
            ("\"tile\":512", "\"tile\":0512"),
            ("\"tile\":512", "\"tile\": 512"),
            ("\"batch\":2", "\"batch\":2.0"),
            ("\"dtype\":\"bf16\"", "\"dtype\":\"bfloat16\""),
            ("\"os\":\"windows\"", "\"os\":\"Windows\""),
            ("\"note\":null", "\"note\":nul"),
            ("{\"a\":\"1\",\"b/c\":\"x y\"}", "{\"b/c\":\"x y\",\"a\":\"1\"}"),
            ("\"run\":2", "\"run\":4294967296"),
            ("}}", "},\"extra\":1}"),
            ("{\"id\"", " {\"id\""),
        ] {
            let bad = line.replacen(from, to, 1);
            assert_ne!(bad, line, "{from}");
            assert_eq!(read_point(&bad, &mut Interners::default()), None, "{to}");
        }
    }

    /// A seeded xorshift, so every run checks the same cases.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        /// Mostly plain text; one string in ten may need escapes.
        fn text(&mut self) -> String {
            const PLAIN: &[&str] = &["a", "Z", "0", " ", "-", "é", "✓", "/", "{", ",", ":"];
            const ESCAPED: &[&str] = &["\"", "\\", "\n", "\t", "\u{1}"];
            let pieces = if self.below(10) == 0 { ESCAPED } else { PLAIN };
            (0..self.below(6)).map(|_| pieces[self.below(pieces.len() as u64) as usize]).collect()
        }
        fn opt_text(&mut self) -> Option<Text> {
            (self.below(3) > 0).then(|| Text::from(self.text()))
        }
        fn number(&mut self) -> u64 {
            [0, 1, 9, 10, 4096, u64::MAX, self.next()][self.below(7) as usize]
        }
    }

    fn random_point(r: &mut Rng) -> Point {
        let pick = |r: &mut Rng, n: usize| r.below(n as u64) as usize;
        Point {
            id: r.text().into(),
            key: LineKey {
                vae: r.text().into(),
                op: Op::ALL[pick(r, Op::ALL.len())],
                tile: r.next() as u32,
                temporal_tile: (r.below(2) == 0).then(|| r.next() as u32),
                conv_backend: ConvBackend::ALL[pick(r, ConvBackend::ALL.len())],
                allocator: Allocator::ALL[pick(r, Allocator::ALL.len())],
                os: Os::ALL[pick(r, Os::ALL.len())],
                dtype: Dtype::ALL[pick(r, Dtype::ALL.len())],
            },
            model: r.opt_text(),
            loaded_dtype: (r.below(2) == 0).then(|| Dtype::ALL[pick(r, 3)]),
            width: r.number(),
            height: r.number(),
            frames: [1, 1, 2, 121, r.number()][r.below(5) as usize],
            batch: r.number(),
            pixels: r.number(),
            demand_bytes: r.number(),
            reserved_bytes: (r.below(2) == 0).then(|| r.number()),
            allocated_bytes: (r.below(2) == 0).then(|| r.number()),
            driver_bytes: (r.below(2) == 0).then(|| r.number()),
            source: r.text().into(),
            device: r.opt_text(),
            torch: r.opt_text(),
            run: (r.below(2) == 0).then(|| r.next() as u32),
            runs: (r.below(2) == 0).then(|| r.next() as u32),
            aggregate: (r.below(2) == 0).then(|| Aggregate::ALL[pick(r, 3)]),
            context: (r.below(2) == 0).then(|| Context::ALL[pick(r, Context::ALL.len())]),
            note: r.opt_text(),
            metadata: (0..r.below(3)).map(|_| (r.text(), r.text())).collect(),
        }
    }

    /// Every point: the codec writes serde's bytes; it reads back exactly
    /// the lines with nothing to unescape; and any byte edit of a line that
    /// it still reads is a line serde reads as the same point and writes
    /// back byte for byte (the codec never accepts what the serde path
    /// would refuse or read differently).
    #[test]
    fn agrees_with_serde_on_generated_points_and_edits() {
        let mut r = Rng(0x5EED_C0DE_CAFE_F00D);
        let (mut read_back, mut edits_read) = (0, 0);
        for _ in 0..3000 {
            let p = random_point(&mut r);
            let mut out = Vec::new();
            write_point(&mut out, &p);
            let line = String::from_utf8(out).unwrap();
            assert_eq!(line, serde_json::to_string(&p).unwrap());
            let escaped = line.contains('\\');
            match read_point(&line, &mut Interners::default()) {
                Some(q) => {
                    assert!(!escaped, "{line}");
                    assert_eq!(q, p);
                    read_back += 1;
                }
                None => assert!(escaped, "a plain line was refused: {line}"),
            }
            for _ in 0..5 {
                let mut bytes = line.clone().into_bytes();
                let at = r.below(bytes.len() as u64) as usize;
                bytes[at] = b"0123456789\"{}:,nul -"[r.below(18) as usize];
                let Ok(edited) = String::from_utf8(bytes) else { continue };
                if let Some(q) = read_point(&edited, &mut Interners::default()) {
                    let by_serde: Point = serde_json::from_str(&edited).expect(&edited);
                    assert_eq!(by_serde, q, "{edited}");
                    assert_eq!(serde_json::to_string(&q).unwrap(), edited);
                    edits_read += 1;
                }
            }
        }
        // Both directions were exercised.
        assert!(read_back > 100 && edits_read > 100, "{read_back} {edits_read}");
    }
}
