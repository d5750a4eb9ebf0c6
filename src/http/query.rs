//! Query strings of list endpoints: parameters read by name, every bad one reported at once
//! as `<name>_invalid`. Unknown parameters are ignored; the first of a repeated one counts.

use crate::domain::FieldError;
use crate::error::ApiError;

pub const DEFAULT_PER_PAGE: u32 = 20;
pub const MAX_PER_PAGE: u32 = 100;

/// Which page of a list: `page` ≥ 1 (default 1), `per_page` 1..=100 (default 20).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub page: u32,
    pub per_page: u32,
}

impl Page {
    pub fn limit(&self) -> i64 {
        i64::from(self.per_page)
    }

    pub fn offset(&self) -> i64 {
        (i64::from(self.page) - 1) * i64::from(self.per_page)
    }

    /// Pages needed for `total` items (0 when there are none).
    pub fn total_pages(&self, total: i64) -> i64 {
        (total + self.limit() - 1) / self.limit()
    }
}

pub struct QueryParams<'a> {
    pairs: &'a [(String, String)],
    errors: Vec<FieldError>,
}

impl<'a> QueryParams<'a> {
    pub fn new(pairs: &'a [(String, String)]) -> Self {
        Self { pairs, errors: Vec::new() }
    }

    pub fn get(&self, name: &str) -> Option<&'a str> {
        self.pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The value of `choices` named by the parameter, `default` when it is absent.
    pub fn choice<T: Copy>(&mut self, name: &'static str, default: T, choices: &[(&str, T)]) -> T {
        let Some(given) = self.get(name) else {
            return default;
        };
        match choices.iter().find(|(value, _)| *value == given) {
            Some((_, choice)) => *choice,
            None => {
                self.errors.push(FieldError::of(name, "invalid"));
                default
            }
        }
    }

    /// An integer in `1..=max`, `default` when absent.
    pub fn number(&mut self, name: &'static str, default: u32, max: u32) -> u32 {
        match self.get(name).map(str::parse::<u32>) {
            None => default,
            Some(Ok(n)) if (1..=max).contains(&n) => n,
            Some(_) => {
                self.errors.push(FieldError::of(name, "invalid"));
                default
            }
        }
    }

    pub fn page(&mut self) -> Page {
        Page {
            // A 32-bit signed integer, as the documented schema (`format: int32`) says.
            page: self.number("page", 1, i32::MAX as u32),
            per_page: self.number("per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE),
        }
    }

    /// Records `<name>_invalid`; answers `None` for the caller's value.
    pub fn invalid<T>(&mut self, name: &'static str) -> Option<T> {
        self.errors.push(FieldError::of(name, "invalid"));
        None
    }

    /// `validation_failed` with every bad parameter, if any.
    pub fn finish(self) -> Result<(), ApiError> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::validation(self.errors))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn pages_default_and_bound() {
        let empty = pairs(&[]);
        let mut q = QueryParams::new(&empty);
        assert_eq!(q.page(), Page { page: 1, per_page: 20 });
        assert!(q.finish().is_ok());
        let given = pairs(&[("page", "3"), ("per_page", "100")]);
        let page = QueryParams::new(&given).page();
        assert_eq!((page.offset(), page.limit()), (200, 100));
        assert_eq!(page.total_pages(0), 0);
        assert_eq!(page.total_pages(201), 3);
    }

    #[test]
    fn every_bad_parameter_is_reported() {
        let bad = pairs(&[("page", "0"), ("per_page", "101"), ("status", "closed"), ("status", "active")]);
        let mut q = QueryParams::new(&bad);
        q.page();
        q.choice("status", 0, &[("active", 1)]);
        match q.finish() {
            Err(ApiError::Validation(errors)) => {
                let codes: Vec<_> = errors.iter().map(|e| e.code.as_str()).collect();
                assert_eq!(codes, ["page_invalid", "per_page_invalid", "status_invalid"]);
            }
            other => panic!("{other:?}"),
        }
    }
}
