//! Values with a shape: each type's constructor is its validation and yields the
//! normalised form that is stored.

use std::fmt;

use crate::body::{Field, FieldType};

/// A string newtype that can only be built by its `parse`.
macro_rules! shaped_text {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }
    };
}

shaped_text!(
    /// An email address with a dotted domain, no display name and no IP literal; the
    /// domain is lower-cased.
    Email
);
shaped_text!(
    /// A phone number that can be written in E.164 ([`PhoneNumber::parse`]), as given.
    PhoneNumber
);
shaped_text!(
    /// An `https` URL whose host is a public DNS name or a public IP address.
    PublicHttpsUrl
);
shaped_text!(
    /// A colour as `#RRGGBB`, upper-case.
    HexColour
);
shaped_text!(
    /// A UK postcode, upper-case with one space before the inward code (`SW1A 1AA`).
    UkPostcode
);
shaped_text!(
    /// A UK VAT registration number without spaces: `GB` (or `XI`, Northern Ireland) and
    /// 9 or 12 digits, or a government department (`GBGD` + 3 digits) or health authority
    /// (`GBHA` + 3 digits) number. Bare digits get the `GB` prefix.
    UkVatNumber
);
shaped_text!(
    /// A Companies House registration number: 8 digits, or 2 letters and 6 digits
    /// (`SC123456`); upper-case without spaces.
    CompanyNumber
);
shaped_text!(
    /// A country name; the usual names of the United Kingdom become `United Kingdom`.
    Country
);

pub const UNITED_KINGDOM: &str = "United Kingdom";

impl Email {
    pub const MAX_CHARS: usize = 254;

    pub fn parse(s: &str) -> Option<Self> {
        let options =
            email_address::Options { minimum_sub_domains: 2, allow_domain_literal: false, allow_display_text: false };
        email_address::EmailAddress::parse_with_options(s, options).ok()?;
        let (local, domain) = s.rsplit_once('@')?;
        Some(Self(format!("{local}@{}", domain.to_lowercase())))
    }
}

impl PhoneNumber {
    pub const MAX_CHARS: usize = 32;

    /// A number that can be written in E.164: international (`+` or `00`, a country code
    /// not starting with 0, 8 to 15 digits in all) or a UK national number (0 and 10 more
    /// digits, or 9 for a few areas), with spaces, dashes, dots and brackets between digits.
    pub fn parse(s: &str) -> Option<Self> {
        let (international, body) = match s.strip_prefix('+') {
            Some(rest) => (true, rest),
            None => (s.starts_with("00"), s),
        };
        let allowed = |c: char| c.is_ascii_digit() || matches!(c, ' ' | '-' | '.' | '(' | ')');
        if !body.chars().all(allowed) {
            return None;
        }
        let digits: String = body.chars().filter(char::is_ascii_digit).collect();
        let e164 = if international {
            let national = if s.starts_with('+') { digits.as_str() } else { &digits[2..] };
            !national.starts_with('0') && (8..=15).contains(&national.len())
        } else {
            digits.starts_with('0') && !digits.starts_with("00") && (10..=11).contains(&digits.len())
        };
        e164.then(|| Self(s.split_whitespace().collect::<Vec<_>>().join(" ")))
    }
}

impl PublicHttpsUrl {
    pub const MAX_CHARS: usize = 2048;

    pub fn parse(s: &str) -> Option<Self> {
        if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return None;
        }
        let scheme = s.get(..8)?;
        if !scheme.eq_ignore_ascii_case("https://") {
            return None;
        }
        let rest = &s[8..];
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        // Credentials in a URL are never wanted in a public logo address.
        if authority.contains('@') {
            return None;
        }
        if !crate::address::is_public_host(host_of(authority)?) {
            return None;
        }
        Some(Self(format!("https://{rest}")))
    }
}

/// The host of an authority (`host`, `host:port`, `[v6]` or `[v6]:port`).
fn host_of(authority: &str) -> Option<&str> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        (host, if after.is_empty() { None } else { Some(after.strip_prefix(':')?) })
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if let Some(port) = port {
        if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        port.parse::<u16>().ok().filter(|p| *p > 0)?;
    }
    (!host.is_empty()).then_some(host)
}

/// What a valid email field holds, in words (`domain::words`).
pub const EMAIL_RULE: &str = "must be an email address at a public domain, like help@yourbrand.co.uk";
/// What a valid phone field holds, in words.
pub const PHONE_RULE: &str =
    "must be a phone number with its country code, like +44 20 7946 0000, or a UK number, like 020 7946 0000";

/// The `country` field of an address (billing, warehouses).
pub const COUNTRY_FIELD: Field = Field::optional(
    "country",
    FieldType::Text { max: Country::MAX_CHARS },
    "A country of ISO 3166-1 by its name or its two- or three-letter code, answered as its name; \
     default `United Kingdom` (`country_invalid`).",
)
.rule("must be a country's name or its two-letter code, like United Kingdom or FR");

impl HexColour {
    pub fn parse(s: &str) -> Option<Self> {
        let hex = s.strip_prefix('#')?;
        (hex.len() == 6 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| Self(format!("#{}", hex.to_uppercase())))
    }
}

/// Upper-case ASCII letters and digits of `s` with spaces removed, or `None` when `s` holds
/// anything else (so byte slicing afterwards is safe).
fn compact(s: &str, also_skip: &[char]) -> Option<String> {
    let kept: String = s.chars().filter(|c| !c.is_whitespace() && !also_skip.contains(c)).collect();
    kept.bytes().all(|b| b.is_ascii_alphanumeric()).then(|| kept.to_ascii_uppercase())
}

/// `A` for a letter and `9` for a digit of each character.
fn pattern(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_digit() { '9' } else { 'A' }).collect()
}

impl UkPostcode {
    pub fn parse(s: &str) -> Option<Self> {
        let code = compact(s, &[])?;
        if code == "GIR0AA" {
            return Some(Self("GIR 0AA".to_owned()));
        }
        if !(5..=7).contains(&code.len()) {
            return None;
        }
        let (outward, inward) = code.split_at(code.len() - 3);
        let outward_ok = ["A9", "A99", "AA9", "AA99", "A9A", "AA9A"].contains(&pattern(outward).as_str());
        (outward_ok && pattern(inward) == "9AA").then(|| Self(format!("{outward} {inward}")))
    }
}

impl UkVatNumber {
    /// `GB` (or `XI`, Northern Ireland) and 9 digits whose check digits hold (HMRC's
    /// modulus 97 or, for numbers issued since 2010, 97 after adding 55), or 12 (the 9 and a
    /// branch), or a government department (`GD` 000–499) or health authority (`HA` 500–999).
    pub fn parse(s: &str) -> Option<Self> {
        let code = compact(s, &['-', '.'])?;
        let (prefix, number) = match code.get(..2) {
            Some(p @ ("GB" | "XI")) => (p, &code[2..]),
            _ => ("GB", code.as_str()),
        };
        let digits = |t: &str, n: usize| t.len() == n && t.bytes().all(|b| b.is_ascii_digit());
        let three = |t: Option<&str>, range: std::ops::RangeInclusive<u16>| {
            t.filter(|t| digits(t, 3)).and_then(|t| t.parse::<u16>().ok()).is_some_and(|n| range.contains(&n))
        };
        let valid = (digits(number, 9) && vat_check_digits_hold(&number[..9]))
            || (digits(number, 12) && vat_check_digits_hold(&number[..9]))
            || three(number.strip_prefix("GD"), 0..=499)
            || three(number.strip_prefix("HA"), 500..=999);
        valid.then(|| Self(format!("{prefix}{number}")))
    }
}

/// HMRC's check of a 9-digit VAT number: the first 7 digits weighted 8 down to 2, plus the
/// last two as a number, is a multiple of 97, or is once 55 is added.
fn vat_check_digits_hold(nine: &str) -> bool {
    let d: Vec<u32> = nine.bytes().map(|b| u32::from(b - b'0')).collect();
    if d.len() != 9 {
        return false;
    }
    let weighted: u32 = d[..7].iter().zip((2..=8).rev()).map(|(digit, weight)| digit * weight).sum();
    let total = weighted + d[7] * 10 + d[8];
    total % 97 == 0 || (total + 55) % 97 == 0
}

/// A postcode of any country: a UK one in its normal form, else 2 to 10 letters and digits
/// (at least one digit) with spaces or dashes between them, upper-cased.
pub fn postcode_anywhere(s: &str) -> Option<String> {
    if let Some(uk) = UkPostcode::parse(s) {
        return Some(uk.into());
    }
    let kept = compact(s, &['-'])?;
    let shaped = s.trim().chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '-'));
    (shaped && (2..=10).contains(&kept.len()) && kept.bytes().any(|b| b.is_ascii_digit()))
        .then(|| s.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_uppercase())
}

impl CompanyNumber {
    pub fn parse(s: &str) -> Option<Self> {
        let code = compact(s, &[])?;
        matches!(pattern(&code).as_str(), "99999999" | "AA999999").then_some(Self(code))
    }
}

impl Country {
    pub const MAX_CHARS: usize = 80;

    /// A country of ISO 3166-1 by its name, official name, or two- or three-letter code (any
    /// case), as its short name; an empty name is the default, the United Kingdom (also
    /// "UK", "Great Britain" and the four nations). `None` for anything else ("Narnia").
    pub fn parse(s: &str) -> Option<Self> {
        let key = |t: &str| t.chars().filter(|c| *c != '.').collect::<String>().trim().to_lowercase();
        let given = key(s);
        let uk = given.is_empty()
            || ["uk", "great britain", "britain", "england", "scotland", "wales", "northern ireland"]
                .contains(&given.as_str());
        if uk {
            return Some(Self(UNITED_KINGDOM.to_owned()));
        }
        super::countries::COUNTRIES
            .iter()
            .find(|(alpha2, alpha3, name, official)| {
                [*alpha2, *alpha3, *name, *official].iter().any(|n| !n.is_empty() && key(n) == given)
            })
            .map(|(_, _, name, _)| Self((*name).to_owned()))
    }

    /// Every country's short name, in order (for a form's list).
    pub fn names() -> impl Iterator<Item = &'static str> {
        super::countries::COUNTRIES.iter().map(|(_, _, name, _)| *name)
    }

    pub fn is_united_kingdom(name: &str) -> bool {
        name == UNITED_KINGDOM
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm<T: Into<String>>(value: Option<T>) -> Option<String> {
        value.map(Into::into)
    }

    #[test]
    fn emails() {
        let cases = [
            ("ada@example.com", Some("ada@example.com")),
            ("Ada.Lovelace+shop@Example.CO.UK", Some("Ada.Lovelace+shop@example.co.uk")),
            ("support@sub.brand.io", Some("support@sub.brand.io")),
            ("no-at-sign", None),
            ("two@@example.com", None),
            ("ada@localhost", None),
            ("ada@[127.0.0.1]", None),
            ("Ada <ada@example.com>", None),
            ("ada@exa mple.com", None),
            ("@example.com", None),
            ("ada@", None),
            ("ada@.com", None),
        ];
        for (input, expected) in cases {
            assert_eq!(norm(Email::parse(input)).as_deref(), expected, "{input}");
        }
    }

    #[test]
    fn phone_numbers() {
        let cases = [
            ("+44 20 7946 0000", Some("+44 20 7946 0000")),
            ("020  7946 0000", Some("020 7946 0000")),
            ("(020) 7946-0000", Some("(020) 7946-0000")),
            ("01632.960.001", Some("01632.960.001")),
            ("0044 20 7946 0000", Some("0044 20 7946 0000")),
            ("+1 212 555 0100", Some("+1 212 555 0100")),
            // Not writable in E.164: no country code and not a UK number; a country code of 0.
            ("7946 0000", None),
            ("1234567", None),
            ("+0 20 7946 0000", None),
            ("123456", None),
            ("+1234567890123456", None),
            ("020 7946 0000 ext 12", None),
            ("++44 20 7946 0000", None),
            ("44+20 7946 0000", None),
            ("call us", None),
        ];
        for (input, expected) in cases {
            assert_eq!(norm(PhoneNumber::parse(input)).as_deref(), expected, "{input}");
        }
    }

    #[test]
    fn public_https_urls() {
        let good = [
            "https://cdn.example.com/logo.png",
            "HTTPS://cdn.example.com/logo.png?v=2#top",
            "https://example.com",
            "https://example.com:8443/a.svg",
            "https://8.8.8.8/logo.png",
            "https://[2606:4700::1111]/logo.png",
            "https://xn--bcher-kva.example/logo.png",
            "https://example.com./logo.png",
        ];
        for url in good {
            assert!(PublicHttpsUrl::parse(url).is_some(), "{url}");
        }
        let bad = [
            "http://cdn.example.com/logo.png",
            "ftp://cdn.example.com/logo.png",
            "//cdn.example.com/logo.png",
            "cdn.example.com/logo.png",
            "https://",
            "https:///logo.png",
            "https://localhost/logo.png",
            "https://LOCALHOST./logo.png",
            "https://shop.localhost/logo.png",
            "https://intranet/logo.png",
            "https://nas.local/logo.png",
            "https://127.0.0.1/logo.png",
            "https://10.1.2.3/logo.png",
            "https://172.16.0.1/logo.png",
            "https://192.168.1.1/logo.png",
            "https://169.254.169.254/latest/meta-data",
            "https://100.64.0.1/logo.png",
            "https://0.0.0.0/logo.png",
            "https://[::1]/logo.png",
            "https://[fd00::1]/logo.png",
            "https://[fe80::1]/logo.png",
            "https://[::ffff:127.0.0.1]/logo.png",
            "https://2130706433/logo.png",
            "https://0x7f.1/logo.png",
            "https://user:pass@example.com/logo.png",
            "https://example.com:0/logo.png",
            "https://example.com:99999/logo.png",
            "https://example.com:/logo.png",
            "https://exa mple.com/logo.png",
            "https://-bad-.example.com/logo.png",
            "https://example.com/logo 1.png",
        ];
        for url in bad {
            assert!(PublicHttpsUrl::parse(url).is_none(), "{url}");
        }
    }

    #[test]
    fn hex_colours() {
        let cases = [
            ("#FF8800", Some("#FF8800")),
            ("#a1b2c3", Some("#A1B2C3")),
            ("FF8800", None),
            ("#FFF", None),
            ("#GG0000", None),
            ("#FF88001", None),
            ("#ÿÿÿ", None),
        ];
        for (input, expected) in cases {
            assert_eq!(norm(HexColour::parse(input)).as_deref(), expected, "{input}");
        }
    }

    #[test]
    fn uk_postcodes() {
        let cases = [
            ("SW1A 1AA", Some("SW1A 1AA")),
            ("sw1a1aa", Some("SW1A 1AA")),
            ("  m1   1ae ", Some("M1 1AE")),
            ("B33 8TH", Some("B33 8TH")),
            ("CR2 6XH", Some("CR2 6XH")),
            ("DN55 1PT", Some("DN55 1PT")),
            ("W1A 0AX", Some("W1A 0AX")),
            ("EC1A 1BB", Some("EC1A 1BB")),
            ("gir 0aa", Some("GIR 0AA")),
            ("12345", None),
            ("SW1A", None),
            ("SW1A 1A", None),
            ("SW1A 1AAA", None),
            ("1W1A 1AA", None),
            ("SW1A-1AA", None),
            ("ÉC1A 1BB", None),
        ];
        for (input, expected) in cases {
            assert_eq!(norm(UkPostcode::parse(input)).as_deref(), expected, "{input}");
        }
    }

    #[test]
    fn uk_vat_numbers() {
        let cases = [
            ("GB999999973", Some("GB999999973")),
            ("gb 999 9999 73", Some("GB999999973")),
            ("GB999999973001", Some("GB999999973001")),
            ("GBGD123", Some("GBGD123")),
            ("GBHA599", Some("GBHA599")),
            ("XI999999973", Some("XI999999973")),
            ("999999973", Some("GB999999973")),
            // Check digits that do not hold (modulus 97 and 9755 both), and out of range.
            ("GB123456789", None),
            ("GB999999974", None),
            ("GB123456789012", None),
            ("GBGD500", None),
            ("GBHA499", None),
            ("GB12345678", None),
            ("GB1234567890", None),
            ("GBGD1234", None),
            ("FR12345678901", None),
            ("GB12345678O", None),
            ("", None),
        ];
        for (input, expected) in cases {
            assert_eq!(norm(UkVatNumber::parse(input)).as_deref(), expected, "{input}");
        }
    }

    #[test]
    fn company_numbers() {
        let cases = [
            ("01234567", Some("01234567")),
            ("SC123456", Some("SC123456")),
            ("sc 123456", Some("SC123456")),
            ("OC301234", Some("OC301234")),
            ("1234567", None),
            ("123456789", None),
            ("S1234567", None),
            ("SC12345A", None),
            ("ÅB123456", None),
        ];
        for (input, expected) in cases {
            assert_eq!(norm(CompanyNumber::parse(input)).as_deref(), expected, "{input}");
        }
    }

    #[test]
    fn countries() {
        for uk in ["United Kingdom", "united kingdom", "UK", "u.k.", "GB", "gb", "Great Britain", "", "GBR", "Wales"] {
            assert_eq!(Country::parse(uk).map(String::from).as_deref(), Some(UNITED_KINGDOM), "{uk}");
        }
        let name = |s: &str| Country::parse(s).map(String::from);
        assert_eq!(name(" France ").as_deref(), Some("France"));
        assert_eq!(name("ie").as_deref(), Some("Ireland"));
        assert_eq!(name("DEU").as_deref(), Some("Germany"));
        assert_eq!(name("Federal Republic of Germany").as_deref(), Some("Germany"));
        for nowhere in ["Narnia", "Europe", "X", "U K"] {
            assert_eq!(name(nowhere), None, "{nowhere}");
        }
        assert!(Country::names().count() >= 249);
        assert!(Country::is_united_kingdom("United Kingdom"));
        assert!(!Country::is_united_kingdom("Ireland"));
    }
}
