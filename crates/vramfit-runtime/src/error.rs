//! The runtime's one error type: every public function that can refuse
//! returns [`Error`], a stable [`Code`] and the words both the CLI and the
//! Python package print. A host branches on the code, never on the words;
//! the words are what a person reads, the same on every surface.
//!
//! Why not `anyhow`: a library's caller must be able to tell "this query
//! cannot be priced" from "the coefficients file is broken" without parsing
//! text, and the Python binding maps the codes onto `ValueError`.

/// What kind of refusal an [`Error`] is. The text of each (`as_str`) is
/// part of the API: the Python package exposes it as `error.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Code {
    /// The query cannot be priced as asked: an unknown family or spelling,
    /// a size, tile or frame count the rules do not take, no price for the
    /// key. The user's to fix.
    Refused,
    /// A size or demand past what 64 bits of bytes hold.
    TooLarge,
    /// A budget the plan cannot be given (share, free, cap).
    Budget,
    /// The coefficients file cannot be read, is not JSON, or is not a
    /// coefficients file this runtime prices.
    File,
    /// Exact arithmetic overflowed inside a rule (a coefficients file with
    /// figures no measurement makes).
    Overflow,
    /// A bug in vramfit, not in the input: a panic caught at the Python
    /// boundary (the CLI exits 2 with the same words). Never raised on
    /// purpose; each one is a defect to report.
    Internal,
}

impl Code {
    pub const ALL: &'static [Code] =
        &[Code::Refused, Code::TooLarge, Code::Budget, Code::File, Code::Overflow, Code::Internal];

    pub fn as_str(&self) -> &'static str {
        match self {
            Code::Refused => "refused",
            Code::TooLarge => "too-large",
            Code::Budget => "budget",
            Code::File => "file",
            Code::Overflow => "overflow",
            Code::Internal => "internal",
        }
    }
}

/// A refusal: its code, its words, and where in a file it lies when it is
/// about a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    code: Code,
    words: String,
    input: Option<Box<InputError>>,
}

/// The runtime's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: Code, words: impl Into<String>) -> Error {
        Error { code, words: words.into(), input: None }
    }

    /// A query the rules do not take.
    pub fn refused(words: impl Into<String>) -> Error {
        Error::new(Code::Refused, words)
    }

    /// A figure past 64 bits of bytes.
    pub fn too_large(words: impl Into<String>) -> Error {
        Error::new(Code::TooLarge, words)
    }

    pub fn code(&self) -> Code {
        self.code
    }

    /// The words, as both surfaces print them.
    pub fn words(&self) -> &str {
        &self.words
    }

    /// The file, line and field, where the refusal is about a file.
    pub fn input(&self) -> Option<&InputError> {
        self.input.as_deref()
    }

    /// The same words under another code (a loader's refusal is about its
    /// file, whatever check found it).
    pub fn with_code(mut self, code: Code) -> Error {
        self.code = code;
        self
    }
}

/// The words a caught panic is refused with, on every surface: what
/// panicked and where, and that the defect is vramfit's.
pub fn internal(what: &str, at: Option<&str>) -> Error {
    let at = at.map(|a| format!(" at {a}")).unwrap_or_default();
    Error::new(
        Code::Internal,
        format!("internal error{at}: {what} (a bug in vramfit, not in the input: please report it with the query)"),
    )
}

/// A panic's message, as `panic!` left it in its payload.
pub fn panic_words(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.words)
    }
}

impl std::error::Error for Error {}

impl From<InputError> for Error {
    fn from(e: InputError) -> Error {
        Error { code: Code::File, words: e.words.clone(), input: Some(Box::new(e)) }
    }
}

/// Words alone: a refusal of the query.
impl From<String> for Error {
    fn from(words: String) -> Error {
        Error::refused(words)
    }
}

impl From<&str> for Error {
    fn from(words: &str) -> Error {
        Error::refused(words)
    }
}

/// A [`Code::Refused`] error with these words: a template with its
/// arguments (`format!`'s syntax) or any text.
macro_rules! refused {
    ($words:literal $(,)?) => {
        $crate::error::Error::refused(format!($words))
    };
    ($template:literal, $($arg:tt)+) => {
        $crate::error::Error::refused(format!($template, $($arg)+))
    };
    ($words:expr $(,)?) => {
        $crate::error::Error::from($words)
    };
}

/// Returns [`refused!`]'s error.
macro_rules! refuse {
    ($($words:tt)+) => {
        return Err($crate::error::refused!($($words)+))
    };
}

// Used by path (`crate::error::refuse!`) inside the crate; a host builds
// its errors with the constructors.
pub(crate) use {refuse, refused};

/// An input error and where it lies, as data: the file, the line
/// (1-based) where one is known, the stored point it names, the field.
/// It shows as its words, which name the place as people read it; the CLI
/// makes a GitHub annotation from the data, never from the words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub file: String,
    pub line: Option<u64>,
    /// The id of the stored point at fault (its line is looked up in the store).
    pub point: Option<String>,
    /// The field, column or policy entry at fault.
    pub field: Option<String>,
    pub words: String,
}

impl InputError {
    /// An error in `file` (at `line` where known), in these words.
    pub fn new(file: impl AsRef<str>, line: Option<u64>, words: impl Into<String>) -> InputError {
        InputError { file: file.as_ref().to_string(), line, point: None, field: None, words: words.into() }
    }

    /// `FILE:LINE: what`, at that line.
    pub fn at_line<L: TryInto<u64>>(file: impl AsRef<str>, line: L, what: impl std::fmt::Display) -> InputError {
        let file = file.as_ref();
        let line = line.try_into().unwrap_or(u64::MAX);
        InputError::new(file, Some(line), format!("{file}:{line}: {what}"))
    }

    /// `FILE: what`, in the file.
    pub fn in_file(file: impl AsRef<str>, what: impl std::fmt::Display) -> InputError {
        let file = file.as_ref();
        InputError::new(file, None, format!("{file}: {what}"))
    }

    pub fn field(mut self, field: &str) -> InputError {
        self.field = Some(field.to_string());
        self
    }

    pub fn point(mut self, id: &str) -> InputError {
        self.point = Some(id.to_string());
        self
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.words)
    }
}

impl std::error::Error for InputError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_words() {
        let mut seen: Vec<&str> = Code::ALL.iter().map(Code::as_str).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), Code::ALL.len());
    }

    #[test]
    fn a_file_error_keeps_its_place() {
        let e: Error = InputError::at_line("vae.json", 3u64, "not valid JSON").into();
        assert_eq!(e.code(), Code::File);
        assert_eq!(e.input().and_then(|i| i.line), Some(3));
        assert_eq!(e.to_string(), "vae.json:3: not valid JSON");
    }
}
