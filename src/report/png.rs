//! A plot's SVG as a PNG, for places that take pictures but not SVG (a
//! pull-request comment). Rendered by resvg with the DejaVu Sans font that
//! ships inside the binary (the `dejavu` crate), never a system font: the
//! same SVG gives the same PNG bytes on every machine, and no font needs
//! installing.

use anyhow::{anyhow, Result};

/// The PNG of `svg`, at the SVG's own size.
pub fn svg_to_png(svg: &str) -> Result<Vec<u8>> {
    let mut options = resvg::usvg::Options { font_family: "DejaVu Sans".into(), ..Default::default() };
    let fonts = options.fontdb_mut();
    fonts.load_font_data(dejavu::sans::regular().to_vec());
    fonts.load_font_data(dejavu::sans::bold().to_vec());
    // plotters names the generic family; every generic one maps to the bundled font.
    fonts.set_sans_serif_family("DejaVu Sans");
    fonts.set_serif_family("DejaVu Sans");
    fonts.set_monospace_family("DejaVu Sans");
    let tree = resvg::usvg::Tree::from_str(svg, &options).map_err(|e| anyhow!("the plot's SVG does not parse: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| anyhow!("a plot of {}x{} px cannot be rendered", size.width(), size.height()))?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| anyhow!("PNG encoding failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_drawn_with_the_bundled_font_and_the_bytes_repeat() {
        let with_text = r#"<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40"><text x="5" y="30" font-family="sans-serif" font-size="24" fill="black">MiB 42</text></svg>"#;
        let blank = r#"<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40"></svg>"#;
        let a = svg_to_png(with_text).unwrap();
        assert!(a.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert_eq!(a, svg_to_png(with_text).unwrap(), "the same SVG, the same bytes");
        // With no font the text would vanish and the picture equal the blank one.
        let pixels = |png: &[u8]| resvg::tiny_skia::Pixmap::decode_png(png).unwrap().data().to_vec();
        let dark = pixels(&a).chunks(4).filter(|p| p[0] < 128).count();
        assert!(dark > 50, "the text was drawn: {dark} dark pixels");
        assert_eq!(pixels(&svg_to_png(blank).unwrap()).chunks(4).filter(|p| p[0] < 128).count(), 0);
    }
}
