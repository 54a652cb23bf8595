//! The envelope's `images`, `files` and `videos` as an approver sees them, decided from each
//! entry's own fields, never from which provider sent it (seed 002).
//!
//! Only what cannot run code or reach the network is shown inline: audio and raster images the
//! gateway carried inside the envelope as `data:` URLs. A remote URL is shown as its address,
//! to copy; an SVG is never drawn (it can carry script). Anything else is named, not opened.

use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    Image,
    Video,
    Audio,
    File,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct MediaView {
    pub kind: MediaKind,
    /// A name to show: the entry's own, or the last part of its URL.
    pub name: String,
    pub mime_type: Option<String>,
    #[ts(type = "number | null")]
    pub size_bytes: Option<u64>,
    pub sha256: Option<String>,
    /// A `data:` URL safe to render inline (audio, raster image).
    pub inline: Option<String>,
    /// An http(s) address, shown as text.
    pub link: Option<String>,
}

const INLINE_LIMIT: usize = 16 * 1024 * 1024;

fn inline_safe(mime: &str) -> bool {
    mime.starts_with("audio/")
        || matches!(
            mime,
            "image/png" | "image/jpeg" | "image/webp" | "image/gif"
        )
}

/// Every entry of the three arrays, in envelope order.
pub fn media(images: &[Value], files: &[Value], videos: &[Value]) -> Vec<MediaView> {
    let groups = [
        (MediaKind::Image, images),
        (MediaKind::File, files),
        (MediaKind::Video, videos),
    ];
    groups
        .iter()
        .flat_map(|(kind, items)| items.iter().map(move |item| entry(*kind, item)))
        .collect()
}

fn entry(kind: MediaKind, item: &Value) -> MediaView {
    let field = |k: &str| item.get(k).and_then(Value::as_str).map(str::to_owned);
    // An entry may be a bare URL string (seed 002 leaves the item shape open).
    let url = field("url").or_else(|| item.as_str().map(str::to_owned));
    let data_mime = url
        .as_deref()
        .and_then(|u| u.strip_prefix("data:"))
        .and_then(|rest| rest.split([';', ',']).next())
        .map(str::to_ascii_lowercase);
    let mime_type = field("mime_type").or_else(|| data_mime.clone());
    let kind = match (kind, mime_type.as_deref()) {
        (MediaKind::File, Some(m)) if m.starts_with("audio/") => MediaKind::Audio,
        (kind, _) => kind,
    };
    let inline = url.clone().filter(|u| {
        u.len() <= INLINE_LIMIT
            && data_mime.as_deref().is_some_and(inline_safe)
            && u.contains(";base64,")
    });
    let link = url
        .clone()
        .filter(|u| u.starts_with("https://") || u.starts_with("http://"));
    let name = field("name")
        .or_else(|| {
            link.as_deref()
                .and_then(|l| l.split(['?', '#']).next())
                .and_then(|l| l.rsplit('/').next())
                .map(str::to_owned)
        })
        .or_else(|| field("id"))
        .unwrap_or_else(|| "unnamed".to_owned());
    MediaView {
        kind,
        name,
        mime_type,
        size_bytes: item.get("size_bytes").and_then(Value::as_u64),
        sha256: field("sha256"),
        inline,
        link,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inline_only_what_cannot_run_or_reach_out() {
        let files = [json!({"name": "speech.wav", "mime_type": "audio/wav",
                            "url": "data:audio/wav;base64,UklGRg==", "size_bytes": 4})];
        let images = [
            json!({"url": "https://replicate.delivery/a/out-0.png", "mime_type": "image/png"}),
            json!({"url": "data:image/svg+xml;base64,PHN2Zz4=", "mime_type": "image/svg+xml"}),
            json!("javascript:alert(1)"),
        ];
        let seen = media(&images, &files, &[]);
        assert_eq!(
            seen[0].link.as_deref(),
            Some("https://replicate.delivery/a/out-0.png")
        );
        assert_eq!(
            (seen[0].inline.clone(), seen[0].name.as_str()),
            (None, "out-0.png")
        );
        assert_eq!(seen[1].inline, None, "an SVG can carry script");
        assert_eq!((seen[2].inline.clone(), seen[2].link.clone()), (None, None));
        assert_eq!(seen[3].kind, MediaKind::Audio);
        assert_eq!(
            seen[3].inline.as_deref(),
            Some("data:audio/wav;base64,UklGRg==")
        );
        assert_eq!(seen[3].size_bytes, Some(4));
    }

    #[test]
    fn an_uploaded_document_is_a_named_file_without_a_url() {
        let files = [json!({"id": "doc_1", "name": "notes.md", "mime_type": "text/markdown"})];
        let seen = media(&[], &files, &[]);
        assert_eq!(
            (seen[0].kind, seen[0].name.as_str()),
            (MediaKind::File, "notes.md")
        );
        assert_eq!((seen[0].inline.clone(), seen[0].link.clone()), (None, None));
    }
}
