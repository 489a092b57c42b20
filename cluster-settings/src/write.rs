//! The settings as a YAML document with comments: the header says what was read and what was
//! not; a key's own comment stands above it. serde_yaml writes the document (its mappings keep
//! the order the keys were put in); the comments are put in by the keys' paths.

use anyhow::Result;

use serde_yaml::Mapping;

/// The settings document: its value, the comments of its header, and comments to put before
/// keys (by their path).
#[derive(Debug, Default)]
pub struct Written {
    pub settings: Mapping,
    pub header: Vec<String>,
    pub notes: Vec<(Vec<String>, Vec<String>)>,
}

impl Written {
    /// A comment above the key at `path`.
    pub fn note(&mut self, path: &[&str], line: String) {
        let path: Vec<String> = path.iter().map(|p| (*p).to_owned()).collect();
        match self.notes.iter_mut().find(|(p, _)| *p == path) {
            Some((_, lines)) => lines.push(line),
            None => self.notes.push((path, vec![line])),
        }
    }
}

/// Comment lines are wrapped to this width.
const WIDTH: usize = 100;

pub fn render(written: &Written) -> Result<String> {
    let body = serde_yaml::to_string(&written.settings)?;
    let mut out = String::new();
    for line in &written.header {
        comment(&mut out, "", line);
    }
    // The stack of keys down to the current line, by indentation (two spaces a level).
    let mut stack: Vec<String> = Vec::new();
    for line in body.lines() {
        let indent = line.len() - line.trim_start().len();
        let content = line.trim_start();
        if indent % 2 == 0
            && !content.starts_with("- ")
            && let Some((key, _)) = content.split_once(':')
        {
            let key = key.trim_matches(|c| c == '\'' || c == '"');
            stack.truncate(indent / 2);
            stack.push(key.to_owned());
            if let Some((_, lines)) = written.notes.iter().find(|(path, _)| *path == stack) {
                for note in lines {
                    comment(&mut out, &line[..indent], note);
                }
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

/// `text` as comment lines at `indent`, wrapped at the width; an empty text is a lone `#`.
fn comment(out: &mut String, indent: &str, text: &str) {
    if text.is_empty() {
        out.push_str(indent);
        out.push_str("#\n");
        return;
    }
    // A text's own leading blanks indent all its lines.
    let words = text.trim_start();
    let lead = &text[..text.len() - words.len()];
    let mut line = String::from(lead);
    for word in words.split(' ') {
        if line.len() > lead.len() && indent.len() + 2 + line.len() + 1 + word.len() > WIDTH {
            out.push_str(&format!("{indent}# {line}\n"));
            line = format!("{lead}  ");
        }
        if !line.trim().is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&format!("{indent}# {line}\n"));
}
