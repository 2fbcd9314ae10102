//! The guide's command-line reference (`docs/book/src/reference/cli.md`), rendered from the
//! clap definition in this module's parent, so that a flag, a verb or a help text cannot change
//! without the page changing too (`tests/docs_drift.rs` compares the two).

use clap::{Arg, Command, CommandFactory};

/// The whole reference page, in Markdown.
pub fn markdown() -> String {
    let mut cmd = super::Cli::command();
    cmd.build();
    let mut out = String::from(
        "# Command-line reference\n\n\
         <!-- Generated from src/cli/ by `LOCKBENCH_BLESS=1 cargo test --test docs_drift`: \
         edit the doc comments there, not this page. -->\n\n\
         Every verb, every flag and its help text, as `lockbench <verb> --help` prints them.\n",
    );
    command(&mut out, &cmd, "lockbench", true);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let path = format!("lockbench {}", sub.get_name());
        if sub.has_subcommands() {
            out.push_str(&format!("\n## `{path}`\n\n{}\n", escape(&about(sub))));
            for leaf in sub.get_subcommands().filter(|s| !s.is_hide_set()) {
                command(
                    &mut out,
                    leaf,
                    &format!("{path} {}", leaf.get_name()),
                    false,
                );
            }
        } else {
            command(&mut out, sub, &path, false);
        }
    }
    out
}

fn about(cmd: &Command) -> String {
    cmd.get_long_about()
        .or(cmd.get_about())
        .map(|s| s.to_string())
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn command(out: &mut String, cmd: &Command, path: &str, top: bool) {
    let level = if top { "##" } else { "###" };
    let title = if top {
        "Global options".to_string()
    } else {
        format!("`{path}`")
    };
    out.push_str(&format!("\n{level} {title}\n\n"));
    if !top {
        out.push_str(&format!("{}\n\n", escape(&about(cmd))));
    }
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage
        .trim()
        .trim_start_matches("Usage: ")
        .replace(cmd.get_bin_name().unwrap_or(cmd.get_name()), path);
    out.push_str(&format!("Usage: `{usage}`\n"));

    // Arguments grouped as `--help` groups them: positionals, then the options under their
    // headings (in order of first appearance), global options only on the top level.
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter(|a| top || !a.is_global_set())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    let positionals: Vec<&Arg> = args.iter().copied().filter(|a| a.is_positional()).collect();
    if !positionals.is_empty() {
        out.push_str("\nArguments:\n\n");
        for a in positionals {
            arg(out, a);
        }
    }
    let mut headings: Vec<Option<&str>> = Vec::new();
    for a in args.iter().filter(|a| !a.is_positional()) {
        if !headings.contains(&a.get_help_heading()) {
            headings.push(a.get_help_heading());
        }
    }
    for heading in headings {
        out.push_str(&format!("\n{}:\n\n", heading.unwrap_or("Options")));
        for a in args
            .iter()
            .filter(|a| !a.is_positional() && a.get_help_heading() == heading)
        {
            arg(out, a);
        }
    }
    if let Some(examples) = cmd.get_after_long_help() {
        out.push_str(&format!(
            "\n```text\n{}\n```\n",
            examples.to_string().trim()
        ));
    }
}

fn arg(out: &mut String, a: &Arg) {
    let value = a
        .get_value_names()
        .map(|names| {
            names
                .iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", a.get_id().as_str().to_uppercase()));
    let takes_value = a.get_action().takes_values();
    let name = match (a.get_long(), a.is_positional()) {
        (_, true) => value.clone(),
        (Some(long), false) if takes_value => format!("--{long} {value}"),
        (Some(long), false) => format!("--{long}"),
        (None, false) => format!("-{}", a.get_short().unwrap_or('?')),
    };
    let help = a
        .get_long_help()
        .or(a.get_help())
        .map(|s| s.to_string())
        .unwrap_or_default();
    let help = escape(&help.trim().replace('\n', " "));
    let mut line = format!("- `{name}`: {help}");
    if !line.ends_with('.') {
        line.push('.');
    }
    let possible: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|p| !p.is_hide_set())
        .map(|p| format!("`{}`", p.get_name()))
        .collect();
    if takes_value && !possible.is_empty() && possible.len() < 12 {
        line.push_str(&format!(" Values: {}.", possible.join(", ")));
    }
    let defaults: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    if takes_value && !defaults.is_empty() {
        line.push_str(&format!(" Default: `{}`.", defaults.join(",")));
    }
    out.push_str(&line);
    out.push('\n');
}

/// A `[[faults]]` table of kind `.0` with every parameter at its default (a required one given
/// the smallest value it takes), to ask the kind where it is refused.
struct Defaults(&'static str);

impl crate::fault::ParamSource for Defaults {
    fn kind(&self) -> &str {
        self.0
    }
    fn path(&self) -> &str {
        "faults[0]"
    }
    fn given(&self, name: &str) -> bool {
        self.text(name).is_some()
    }
    fn text(&self, name: &str) -> Option<&str> {
        // The parameters some kinds require; everything else has a default.
        const REQUIRED: [(&str, &str, &str); 2] =
            [("slow", "latency", "1ms"), ("clock", "by", "30s")];
        REQUIRED
            .iter()
            .find(|(kind, field, _)| *kind == self.0 && *field == name)
            .map(|(_, _, value)| *value)
    }
    fn flag(&self, _: &str) -> Option<bool> {
        None
    }
    fn number(&self, _: &str) -> Option<f64> {
        None
    }
    fn duration_text(&self) -> Option<&str> {
        Some("1s")
    }
    fn kinds(
        &self,
        _: &str,
    ) -> Option<Result<Vec<crate::fault::FaultKind>, crate::spec_error::SpecError>> {
        None
    }
    fn invalid(&self, field: &str, value: &str, expected: &str) -> crate::spec_error::SpecError {
        crate::spec_error::SpecError::Invalid {
            origin: "defaults".into(),
            field: field.into(),
            value: value.into(),
            expected: expected.into(),
        }
    }
    fn missing(&self, field: &str, hint: &str) -> crate::spec_error::SpecError {
        self.invalid(field, "missing", hint)
    }
    fn out_of_range(&self, field: &str, value: &str, valid: &str) -> crate::spec_error::SpecError {
        self.invalid(field, value, valid)
    }
    fn conflict(&self, message: String) -> crate::spec_error::SpecError {
        self.invalid("", "", &message)
    }
    fn duration(
        &self,
        field: &str,
        text: &str,
        _: std::time::Duration,
        _: std::time::Duration,
    ) -> Result<std::time::Duration, crate::spec_error::SpecError> {
        humantime::parse_duration(text).map_err(|e| self.invalid(field, text, &e.to_string()))
    }
}

/// `<` and `>` outside code spans as entities, so that `<workload>` in a help text is shown and
/// not taken for an HTML tag.
fn escape(text: &str) -> String {
    let mut code = false;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '`' => {
                code = !code;
                out.push(c);
            }
            '<' if !code => out.push_str("&lt;"),
            '>' if !code => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}

/// The guide's generated table of fault kinds (`docs/book/src/reference/fault-kinds.md`), from
/// the one list of kinds ([`crate::fault::KINDS`]) and the chaos file's own fields.
pub fn fault_kinds_markdown() -> String {
    use crate::fault::{KINDS, ParamType, Realism};
    let (top, timing) = crate::nemesis::schedule::file_fields();
    let mut out = String::from(
        "# Fault kinds and chaos file fields\n\n\
         <!-- Generated from src/fault/ and src/nemesis/schedule/ by \
         `LOCKBENCH_BLESS=1 cargo test --test docs_drift`: do not edit by hand. -->\n\n\
         A chaos file's top-level fields: ",
    );
    let names = |list: &[&str]| {
        list.iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    out.push_str(&names(top));
    out.push_str(".\n\nEvery `[[faults]]` table takes `kind`, the timing fields ");
    out.push_str(&names(timing));
    out.push_str(
        ", and its kind's parameters:\n\n\
         | kind | parameters | how long it lasts | real or modelled | refused on |\n\
         |---|---|---|---|---|\n",
    );
    for k in KINDS {
        let params: Vec<String> = k
            .parameters
            .iter()
            .map(|p| {
                let ty = match p.ty {
                    ParamType::Text => "text",
                    ParamType::Flag => "true or false",
                    ParamType::Number => "number",
                    ParamType::Kinds => "list of kinds",
                };
                format!("`{}` ({ty})", p.name)
            })
            .collect();
        let params = if params.is_empty() {
            "none".to_string()
        } else {
            params.join(", ")
        };
        let lasts = if k.composite {
            format!(
                "`{}`; each occurrence draws one of its kinds",
                k.window_field
            )
        } else {
            format!("`{}`", k.window_field)
        };
        let realism = match k.realism {
            Realism::Real => "real",
            Realism::Modelled => "modelled",
        };
        let refused = if k.composite {
            "where a kind it draws is refused".to_string()
        } else {
            let defaults = Defaults(k.name);
            match (k.read)(&crate::fault::Params::new(&defaults)).map(|f| f.refusal()) {
                Ok(Some(r)) => r
                    .systems
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                Ok(None) => "none".to_string(),
                Err(e) => format!("(could not read its defaults: {e})"),
            }
        };
        out.push_str(&format!(
            "| `{}` | {params} | {lasts} | {realism} | {refused} |\n",
            k.name
        ));
    }
    out.push_str(
        "\n*Refused on*: the systems a schedule with this kind may not run on; such a schedule \
         must name its systems without them, or it is refused before anything starts. Other \
         conditions (a client pause needs clients as worker processes; a target needs a command \
         for each primitive the kind acts through) are in the [chaos chapter](../chaos.md).\n",
    );
    out
}
