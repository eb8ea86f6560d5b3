//! The text a model reads from an MCP `tools/call` result.

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

/// The text of a result, block by block, one block per line:
///
/// - text blocks as they are;
/// - images and audio as a note saying what was left out, e.g.
///   `[image omitted: image/png, 1234 bytes]`: the registry's tools answer with text;
/// - embedded text resources as `[resource: URI]` followed by their text; binary ones as a note;
/// - resource links as `[resource link: URI (name): description]`;
/// - `structuredContent` as compact JSON when there is no text block: the spec asks servers
///   that return structured content to send its text form too, and SDKs wrap plain values
///   (`{"result": …}`) beside their text, so with text the model has it already.
pub(super) fn result_text(result: &CallToolResult) -> String {
    content_text(&result.content, result.structured_content.as_ref())
}

/// [`result_text`] of a result's `content` and `structuredContent`.
pub(super) fn content_text(content: &[ContentBlock], structured: Option<&Value>) -> String {
    let mut lines: Vec<String> = content.iter().map(block_text).collect();
    if let Some(structured) = structured {
        let has_text = content.iter().any(|block| block.as_text().is_some());
        if !has_text {
            lines.push(structured.to_string());
        }
    }
    lines.join("\n")
}

/// `text` cut to at most `max` bytes (at a character boundary), with a note saying so for the
/// model; as it is when it fits.
pub(super) fn truncated(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n[truncated: the result is {} bytes; only the first {cut} are shown]",
        &text[..cut],
        text.len()
    )
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!(
            "[image omitted: {}, {} bytes]",
            image.mime_type,
            decoded_len(&image.data)
        ),
        ContentBlock::Audio(audio) => format!(
            "[audio omitted: {}, {} bytes]",
            audio.mime_type,
            decoded_len(&audio.data)
        ),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource: {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource omitted: {uri}, {}, {} bytes]",
                mime_type.as_deref().unwrap_or("unknown type"),
                decoded_len(blob)
            ),
            _ => "[resource omitted: unsupported kind]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => {
            let mut text = format!("[resource link: {} ({})", link.uri, link.name);
            if let Some(description) = &link.description {
                text.push_str(": ");
                text.push_str(description);
            }
            text.push(']');
            text
        }
        // A block kind newer than this code: say so rather than drop it silently.
        _ => "[content omitted: unsupported block]".to_owned(),
    }
}

/// The size of base64 data once decoded; an estimate from its length when it is not valid
/// base64 (the note is for the model, not a checksum).
fn decoded_len(data: &str) -> usize {
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_or(data.len() / 4 * 3, |bytes| bytes.len())
}

#[cfg(test)]
mod tests {
    use rmcp::model::Resource;
    use serde_json::json;

    use super::*;

    fn result(content: Vec<ContentBlock>) -> CallToolResult {
        CallToolResult::success(content)
    }

    #[test]
    fn long_text_is_cut_at_a_character_boundary_with_a_note() {
        assert_eq!(truncated("short".to_owned(), 5), "short");
        assert_eq!(
            truncated("héllo".to_owned(), 2),
            "h\n[truncated: the result is 6 bytes; only the first 1 are shown]"
        );
        assert_eq!(
            truncated("abc".to_owned(), 0),
            "\n[truncated: the result is 3 bytes; only the first 0 are shown]"
        );
    }

    #[test]
    fn text_blocks_are_joined_by_lines() {
        let text = result_text(&result(vec![
            ContentBlock::text("one"),
            ContentBlock::text("two"),
        ]));
        assert_eq!(text, "one\ntwo");
    }

    #[test]
    fn binary_blocks_are_described() {
        let text = result_text(&result(vec![
            ContentBlock::image("AAECAw==", "image/png"),
            ContentBlock::audio("AAE=", "audio/wav"),
            ContentBlock::resource(ResourceContents::BlobResourceContents {
                uri: "file:///a.bin".to_owned(),
                mime_type: Some("application/octet-stream".to_owned()),
                blob: "AAAA".to_owned(),
                meta: None,
            }),
        ]));
        assert_eq!(
            text,
            "[image omitted: image/png, 4 bytes]\n[audio omitted: audio/wav, 2 bytes]\n\
             [resource omitted: file:///a.bin, application/octet-stream, 3 bytes]"
        );
    }

    #[test]
    fn text_resources_and_links_are_readable() {
        let link = Resource::new("demo://x", "x").with_description("an x");
        let text = result_text(&result(vec![
            ContentBlock::embedded_text("demo://t", "hello"),
            ContentBlock::resource_link(link),
        ]));
        assert_eq!(
            text,
            "[resource: demo://t]\nhello\n[resource link: demo://x (x): an x]"
        );
    }

    #[test]
    fn structured_content_is_added_when_there_is_no_text() {
        let mut both = result(vec![ContentBlock::text(r#"{"t": 1}"#)]);
        both.structured_content = Some(json!({"t": 1}));
        assert_eq!(result_text(&both), r#"{"t": 1}"#);

        let mut wrapped = result(vec![ContentBlock::text("hello")]);
        wrapped.structured_content = Some(json!({"result": "hello"}));
        assert_eq!(result_text(&wrapped), "hello");

        let mut beside_an_image = result(vec![ContentBlock::image("AA==", "image/png")]);
        beside_an_image.structured_content = Some(json!([1, 2]));
        assert_eq!(
            result_text(&beside_an_image),
            "[image omitted: image/png, 1 bytes]\n[1,2]"
        );

        let mut only = result(vec![]);
        only.structured_content = Some(json!({"t": 1}));
        assert_eq!(result_text(&only), r#"{"t":1}"#);
    }
}
