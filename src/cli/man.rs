//! `vramfit man`: the manual page, made from the same command definition
//! as `--help` and the completions.

use super::args::command;

/// `vramfit man`: one page that documents every subcommand and its
/// options (no `vramfit-SUBCOMMAND(1)` page is referred to: none is
/// installed), each subcommand's examples after them.
pub(super) fn man_page() -> anyhow::Result<Vec<u8>> {
    let cmd = command();
    let page = clap_mangen::Man::new(cmd.clone());
    let mut bytes = Vec::new();
    page.render_title(&mut bytes)?;
    page.render_name_section(&mut bytes)?;
    page.render_synopsis_section(&mut bytes)?;
    page.render_description_section(&mut bytes)?;
    page.render_options_section(&mut bytes)?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("vramfit {}", sub.get_name());
        bytes.extend_from_slice(format!(".SH \"{}\"\n", name.to_uppercase()).as_bytes());
        let one = clap_mangen::Man::new(sub.clone().name(name).bin_name(format!("vramfit {}", sub.get_name())));
        let mut part = Vec::new();
        one.render_description_section(&mut part)?;
        one.render_synopsis_section(&mut part)?;
        one.render_options_section(&mut part)?;
        if sub.get_after_help().is_some() {
            one.render_extra_section(&mut part)?;
        }
        // Each subcommand's sections become subsections of its own.
        let part = String::from_utf8_lossy(&part)
            .replace(".SH DESCRIPTION", ".SS Description")
            .replace(".SH SYNOPSIS", ".SS Usage")
            .replace(".SH OPTIONS", ".SS Options")
            .replace(".SH EXTRA", ".SS Examples");
        bytes.extend_from_slice(part.as_bytes());
    }
    let mut tail = Vec::new();
    page.render_extra_section(&mut tail)?;
    page.render_version_section(&mut tail)?;
    bytes.extend_from_slice(&tail);
    Ok(bytes)
}
