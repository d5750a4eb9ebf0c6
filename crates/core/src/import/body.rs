//! The body of `bulk-validate` and `bulk-commit`, described once: the file, as base64 or
//! as CSV text.

use serde_json::{Map, Value};

use super::{ImportError, Upload, MAX_FILE_BYTES};
use rehome_domain::body::{BodySpec, Field, FieldType};
use rehome_domain::reader::BodyReader;
use rehome_domain::FieldError;

/// Longest `file_b64` or `csv_text` documented: a file of [`MAX_FILE_BYTES`] as base64
/// with room for line breaks (the decoded size is what is enforced).
const FILE_TEXT_MAX: usize = MAX_FILE_BYTES / 3 * 4 + MAX_FILE_BYTES / 38;

pub const BULK_BODY: BodySpec = BodySpec {
    name: "BulkBody",
    doc: "The body of `bulk-validate` and `bulk-commit`: one of the two fields.",
    fields: &[
        Field::optional(
            "file_b64",
            FieldType::Lines { max: FILE_TEXT_MAX },
            "The file, base64: an .xlsx workbook or a CSV file (UTF-8, UTF-16 or Windows-1252; comma, semicolon or \
tab separated), told apart by content. At most 5 MiB decoded.",
        ),
        Field::optional("csv_text", FieldType::Lines { max: MAX_FILE_BYTES }, "Legacy: the CSV as text."),
        Field::optional(
            "mode",
            FieldType::Choice(&["create", "upsert"]),
            "`create` (default): every valid row creates a listing. `upsert`: a row whose `sku` matches one of the \
brand's listings updates it (PATCH rules: blank cells leave fields as they are) instead of creating another. Also \
accepted as the query parameter `?mode=`.",
        ),
    ],
    example: r#"{"file_b64": "dGl0bGUscHJpY2VfZ2JwLGNvbmRpdGlvbixjYXRlZ29yeSxmYXVsdHMKU29mYSwxMjAsZmFpcixBcm1jaGFpcnMsTm9uZQo="}"#,
};

rehome_domain::documented_body!(Upload, BULK_BODY);

/// What a row whose `sku` names one of the brand's listings does (decisions 11.3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Every valid row creates a listing.
    #[default]
    Create,
    /// A row whose `sku` matches one of the brand's listings updates it (PATCH rules); the
    /// others create listings.
    Upsert,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Upsert => "upsert",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "create" => Some(Self::Create),
            "upsert" => Some(Self::Upsert),
            _ => None,
        }
    }
}

/// A bulk body read: the file, and the mode when the body names one.
#[derive(Debug, Clone)]
pub struct BulkUpload {
    pub upload: Upload,
    pub mode: Option<Mode>,
}

/// Why a bulk body names no file to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadRefused {
    /// A field of the wrong type, or an unknown field.
    Invalid(Vec<FieldError>),
    /// No file, both fields, or a `file_b64` that does not decode.
    File(ImportError),
}

/// `file_b64` or `csv_text` (blank counts as absent), exactly one of them. Their text is
/// taken as sent: base64 and CSV keep their line breaks.
pub fn read_upload(body: &Map<String, Value>) -> Result<BulkUpload, UploadRefused> {
    let mut r = BodyReader::of(body, &BULK_BODY);
    let mut text = |field: &'static str| match r.raw(field) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => r.fail(field, "invalid"),
    };
    let (file, csv) = (text("file_b64"), text("csv_text"));
    let mode = match r.raw("mode") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if Mode::parse(s).is_some() => Mode::parse(s),
        Some(_) => r.fail("mode", "invalid"),
    };
    let (file, csv) = r.finish((file, csv)).map_err(UploadRefused::Invalid)?;
    let upload = match (file, csv) {
        (Some(file), None) => Upload::from_base64(file).map_err(UploadRefused::File),
        (None, Some(csv)) => Ok(Upload::CsvText(csv.to_owned())),
        (Some(_), Some(_)) => {
            Err(UploadRefused::File(ImportError::refused("Send the file in file_b64 or in csv_text, not both.")))
        }
        (None, None) => Err(UploadRefused::File(ImportError::refused(
            "No file: send the spreadsheet as base64 in file_b64 (or CSV text in csv_text).",
        ))),
    }?;
    Ok(BulkUpload { upload, mode })
}

/// A bulk file sent as a form (`multipart/form-data`, decisions 15.1): a file part named
/// `file` and, optionally, a `mode` field; `fields` are the form's parts (name, bytes) in
/// order.
pub fn read_form<'a>(fields: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Result<BulkUpload, UploadRefused> {
    let (mut file, mut mode, mut errors) = (None, None, Vec::new());
    for (name, bytes) in fields {
        match name {
            "file" if file.is_none() => file = Some(bytes),
            "file" => errors.push(FieldError::of("file", "invalid")),
            "mode" => match std::str::from_utf8(bytes).ok().and_then(Mode::parse) {
                Some(given) => mode = Some(given),
                None => errors.push(BULK_BODY.error("mode", "invalid")),
            },
            other => errors.push(FieldError::of(other, "unknown")),
        }
    }
    if !errors.is_empty() {
        return Err(UploadRefused::Invalid(errors));
    }
    let file = file.filter(|f| !f.is_empty()).ok_or_else(|| {
        UploadRefused::File(ImportError::refused("No file: send the spreadsheet as a form part named `file`."))
    })?;
    if file.len() > MAX_FILE_BYTES {
        return Err(UploadRefused::File(super::too_large()));
    }
    Ok(BulkUpload { upload: Upload::File(file.to_vec()), mode })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rehome_domain::reader::object;
    use serde_json::json;

    fn refused(value: Value) -> Vec<String> {
        match read_upload(&object(value)) {
            Ok(_) => vec![],
            Err(UploadRefused::Invalid(errors)) => errors.into_iter().map(|e| e.code).collect(),
            Err(UploadRefused::File(e)) => vec![e.to_string()],
        }
    }

    #[test]
    fn a_bulk_form_names_one_file_part() {
        let read = read_form([("file", b"a,b\n1,2".as_slice()), ("mode", b"upsert".as_slice())]).unwrap();
        assert!(matches!(read, BulkUpload { upload: Upload::File(_), mode: Some(Mode::Upsert) }));
        let codes = |fields: Vec<(&'static str, &'static [u8])>| match read_form(fields) {
            Ok(_) => vec![],
            Err(UploadRefused::Invalid(errors)) => errors.into_iter().map(|e| e.code).collect(),
            Err(UploadRefused::File(e)) => vec![e.to_string()],
        };
        assert_eq!(codes(vec![("file", b"x"), ("file", b"y"), ("sheet", b"1")]), ["file_invalid", "sheet_unknown"]);
        assert_eq!(codes(vec![("file", b"x"), ("mode", b"merge")]), ["mode_invalid"]);
        assert_eq!(codes(vec![("mode", b"create")]), ["No file: send the spreadsheet as a form part named `file`."]);
    }

    #[test]
    fn a_bulk_body_names_one_file() {
        let read = read_upload(&object(json!({"csv_text": "a,b\n1,2", "mode": "upsert"}))).unwrap();
        assert!(matches!(read, BulkUpload { upload: Upload::CsvText(_), mode: Some(Mode::Upsert) }));
        let read = read_upload(&object(json!({"file_b64": "YWI=\n", "csv_text": " "}))).unwrap();
        assert!(matches!(read, BulkUpload { upload: Upload::File(_), mode: None }));
        assert_eq!(refused(json!({"file_b64": 3, "sheet": 1})), ["file_b64_invalid", "sheet_unknown"]);
        assert_eq!(refused(json!({"csv_text": "a", "mode": "merge"})), ["mode_invalid"]);
        assert_eq!(refused(json!({"csv_text": "a", "mode": 1})), ["mode_invalid"]);
        assert_eq!(
            refused(json!({})),
            ["No file: send the spreadsheet as base64 in file_b64 (or CSV text in csv_text)."]
        );
        assert_eq!(
            refused(json!({"file_b64": "YWI=", "csv_text": "a"})),
            ["Send the file in file_b64 or in csv_text, not both."]
        );
    }

    #[test]
    fn the_example_is_a_file() {
        let example = object(serde_json::from_str(BULK_BODY.example).unwrap());
        assert!(read_upload(&example).is_ok());
    }
}
