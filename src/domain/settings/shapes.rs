//! Values with a shape: each type's constructor is its validation and yields the
//! normalised form that is stored.

use std::fmt;
use std::net::IpAddr;

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
    /// A phone number: digits with spaces, dashes, dots or brackets, an optional leading
    /// `+`, and 7 to 15 digits (the E.164 maximum).
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

    pub fn parse(s: &str) -> Option<Self> {
        let body = s.strip_prefix('+').unwrap_or(s);
        let allowed = |c: char| c.is_ascii_digit() || matches!(c, ' ' | '-' | '.' | '(' | ')');
        let digits = body.chars().filter(char::is_ascii_digit).count();
        if !body.chars().all(allowed) || !(7..=15).contains(&digits) {
            return None;
        }
        Some(Self(s.split_whitespace().collect::<Vec<_>>().join(" ")))
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
        if !public_host(host_of(authority)?) {
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

/// A public DNS name or a public IP address: not localhost, not a private, loopback,
/// link-local or otherwise reserved range, not a single-label or numeric name.
fn public_host(host: &str) -> bool {
    // The same classification as every outbound request (src/net).
    if let Ok(ip) = host.parse::<IpAddr>() {
        return crate::domain::address::is_public(ip);
    }
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let labels: Vec<&str> = name.split('.').collect();
    let label_ok = |l: &&str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let internal =
        ["localhost", "local", "internal", "localdomain", "home", "lan", "corp", "intranet", "test", "invalid"];
    name.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(label_ok)
        && labels.last().is_some_and(|tld| !tld.bytes().all(|b| b.is_ascii_digit()) && !internal.contains(tld))
        && !(labels.len() >= 2 && name.ends_with(".home.arpa"))
}

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
    pub fn parse(s: &str) -> Option<Self> {
        let code = compact(s, &['-', '.'])?;
        let (prefix, number) = match code.get(..2) {
            Some(p @ ("GB" | "XI")) => (p, &code[2..]),
            _ => ("GB", code.as_str()),
        };
        let digits = |t: &str, n: usize| t.len() == n && t.bytes().all(|b| b.is_ascii_digit());
        let valid = digits(number, 9)
            || digits(number, 12)
            || number.strip_prefix("GD").is_some_and(|t| digits(t, 3))
            || number.strip_prefix("HA").is_some_and(|t| digits(t, 3));
        valid.then(|| Self(format!("{prefix}{number}")))
    }
}

impl CompanyNumber {
    pub fn parse(s: &str) -> Option<Self> {
        let code = compact(s, &[])?;
        matches!(pattern(&code).as_str(), "99999999" | "AA999999").then_some(Self(code))
    }
}

impl Country {
    pub const MAX_CHARS: usize = 80;

    /// An empty name is the default, the United Kingdom.
    pub fn parse(s: &str) -> Self {
        let key: String = s.chars().filter(|c| *c != '.').collect::<String>().trim().to_lowercase();
        let uk = key.is_empty()
            || ["united kingdom", "uk", "gb", "great britain", "united kingdom of great britain and northern ireland"]
                .contains(&key.as_str());
        Self(if uk { UNITED_KINGDOM.to_owned() } else { s.trim().to_owned() })
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
            ("GB123456789", Some("GB123456789")),
            ("gb 123 4567 89", Some("GB123456789")),
            ("GB123456789012", Some("GB123456789012")),
            ("GBGD123", Some("GBGD123")),
            ("GBHA599", Some("GBHA599")),
            ("XI123456789", Some("XI123456789")),
            ("123456789", Some("GB123456789")),
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
        for uk in ["United Kingdom", "united kingdom", "UK", "u.k.", "GB", "gb", "Great Britain", ""] {
            assert_eq!(Country::parse(uk).as_str(), UNITED_KINGDOM, "{uk}");
        }
        assert_eq!(Country::parse(" France ").as_str(), "France");
        assert!(Country::is_united_kingdom("United Kingdom"));
        assert!(!Country::is_united_kingdom("Ireland"));
    }
}
