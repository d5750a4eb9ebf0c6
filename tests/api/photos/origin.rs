//! Local image servers for import tests: an axum app serving images, slow answers and
//! redirects; and a raw TCP one that streams an endless chunked body.

// A stand-in image host, not a route of ours: its answers are not counted.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use image::ImageFormat;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::image_bytes;

pub struct Origin {
    pub addr: SocketAddr,
    /// How many requests each path (with its query) was asked for.
    hits: Arc<Mutex<HashMap<String, usize>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Origin {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// How many times `path` (with its query) was requested.
    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().map_or(0, |hits| hits.get(path).copied().unwrap_or(0))
    }

    /// Serves `/sofa.png` (1200×800), `/page.html`, `/slow.png` (answers after 10 s),
    /// `/to-metadata` (redirects to 169.254.169.254), `/to-file` (to `file:///etc/passwd`), `/hop/{n}` (n + 1 redirects, the last to
    /// the sofa) and `/missing` (404).
    pub async fn start() -> Self {
        let sofa = Arc::new(image_bytes(ImageFormat::Png, 1200, 800));
        let app = Router::new()
            .route("/sofa.png", get(|State(s): State<Arc<Vec<u8>>>| async move { png(&s) }))
            .route("/page.html", get(|| async { ([(header::CONTENT_TYPE, "text/html")], "<html>not an image</html>") }))
            .route(
                "/slow.png",
                get(|State(s): State<Arc<Vec<u8>>>| async move {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    png(&s)
                }),
            )
            .route("/to-metadata", get(|| async { redirect("http://169.254.169.254/latest/meta-data") }))
            .route("/to-file", get(|| async { redirect("file:///etc/passwd") }))
            .route(
                "/hop/{n}",
                get(|Path(n): Path<u32>| async move {
                    if n == 0 {
                        redirect("/sofa.png")
                    } else {
                        redirect(&format!("/hop/{}", n - 1))
                    }
                }),
            )
            .with_state(sofa);
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let counted = hits.clone();
        let app = app.layer(axum::middleware::from_fn(move |request: Request, next: Next| {
            let counted = counted.clone();
            async move {
                let path = request.uri().path_and_query().map_or_else(String::new, |p| p.as_str().to_owned());
                if let Ok(mut hits) = counted.lock() {
                    *hits.entry(path).or_default() += 1;
                }
                next.run(request).await
            }
        }));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind origin");
        let addr = listener.local_addr().expect("origin addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, hits, task }
    }

    /// A server whose every answer is a chunked PNG-looking body that never ends.
    pub async fn endless() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind endless");
        let addr = listener.local_addr().expect("endless addr");
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut request = [0u8; 4096];
                    let _ = socket.read(&mut request).await;
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nTransfer-Encoding: chunked\r\n\r\n";
                    if socket.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let mut chunk = b"\x89PNG\r\n\x1a\n".to_vec();
                    chunk.resize(256 * 1024, 0);
                    let framed = [format!("{:x}\r\n", chunk.len()).into_bytes(), chunk, b"\r\n".to_vec()].concat();
                    while socket.write_all(&framed).await.is_ok() {}
                });
            }
        });
        Self { addr, hits: Arc::default(), task }
    }
}

fn png(bytes: &[u8]) -> Response {
    ([(header::CONTENT_TYPE, "image/png")], bytes.to_vec()).into_response()
}

fn redirect(to: &str) -> Response {
    (StatusCode::FOUND, [(header::LOCATION, to.to_owned())]).into_response()
}
