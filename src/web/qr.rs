//! QR codes as inline SVG, drawn by the server (no image service, no script): the module
//! grid becomes one path of unit squares inside a quiet zone of four modules.

use std::fmt::Write;

use qrcodegen::{QrCode, QrCodeEcc};

/// Quiet-zone width in modules (the QR specification's minimum).
const BORDER: i32 = 4;

/// An `<svg>` element encoding `text`, or `None` if it is too long for a QR code.
pub fn svg(text: &str, label: &str) -> Option<String> {
    let qr = QrCode::encode_text(text, QrCodeEcc::Medium).ok()?;
    let size = qr.size();
    let dim = size + 2 * BORDER;
    let mut path = String::new();
    for y in 0..size {
        for x in 0..size {
            if qr.get_module(x, y) {
                let _ = write!(path, "M{},{}h1v1h-1z", x + BORDER, y + BORDER);
            }
        }
    }
    let label = label.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;");
    Some(format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {dim} {dim}" width="{px}" height="{px}" role="img" aria-label="{label}" shape-rendering="crispEdges"><rect width="{dim}" height="{dim}" fill="#fff"/><path d="{path}" fill="#000"/></svg>"##,
        px = dim * 5,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_otpauth_url_becomes_a_self_contained_svg() {
        let svg =
            svg("otpauth://totp/rehome:ada%40acme.example?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=rehome", "QR")
                .unwrap();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("<path d=\"M"));
        assert!(!svg.contains("style") && !svg.contains("href"), "nothing the CSP would block or fetch");
    }
}
