//! Hybrid tool search over real HTTP: the embedders of OpenAI-compatible servers, Ollama and
//! Gemini against a loopback server that answers in each API's documented shape, a tool's
//! embedding computed once per definition, and every failure of the embedder falling back to
//! the lexical ranking instead of failing the search.
//!
//! The answers follow the API references:
//! - OpenAI `POST /v1/embeddings`: <https://platform.openai.com/docs/api-reference/embeddings/create>
//!   (the object: <https://platform.openai.com/docs/api-reference/embeddings/object>), which
//!   llama.cpp's server also serves with `--embeddings`
//!   (<https://github.com/ggml-org/llama.cpp/tree/master/tools/server#post-v1embeddings-openai-compatible-embeddings-api>);
//! - Ollama `POST /api/embed`: <https://github.com/ollama/ollama/blob/main/docs/api.md#generate-embeddings>;
//! - Gemini `models/{model}:batchEmbedContents`:
//!   <https://ai.google.dev/api/embeddings#method:-models.batchembedcontents>.

use std::{sync::Arc, time::Duration};

use serde_json::{Value, json};
use tool_core::{
    Agent, AgentOptions, ChatTool, RegistryOptions, ToolRegistry,
    agent::HybridSearch,
    model::{
        EmbedError, Endpoint, GeminiEmbedder, OllamaEmbedder, OpenAiEmbedder, ProviderError,
        ScriptedModel,
    },
    search::hybrid::embedding_text,
};

use crate::{
    loopback::{Reply, Server, fast_retries},
    tool_search::{result_of, search},
    tool_search_eval::Dumped,
};

/// Three deferred tools; none shares a word, or a word related to one, with the request
/// "somewhere to put my holiday pictures", so the words alone find nothing.
fn registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::with_options(RegistryOptions::new().defer_loading(true));
    for (name, description) in [
        ("send_email", "Send an email message to a recipient."),
        ("create_directory", "Create a directory, with its parents."),
        ("get_weather", "Current weather for a city."),
    ] {
        registry
            .register(Dumped(ChatTool::new(
                name,
                description,
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            )))
            .unwrap();
    }
    Arc::new(registry)
}

/// The tools' vectors, in registration order, and the query's: nearest `create_directory`.
const TOOL_VECTORS: [[f32; 3]; 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
const QUERY_VECTOR: [f32; 3] = [0.1, 0.9, 0.2];
const QUERY: &str = "somewhere to put my holiday pictures";

/// An OpenAI `/v1/embeddings` answer, as the API reference shows it.
fn openai_answer(vectors: &[&[f32]]) -> Reply {
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .map(|(index, vector)| json!({"object": "embedding", "index": index, "embedding": vector}))
        .collect();
    Reply::json_owned(
        json!({
            "object": "list",
            "data": data,
            "model": "text-embedding-3-small",
            "usage": {"prompt_tokens": 8, "total_tokens": 8}
        })
        .to_string(),
    )
}

fn tool_texts(registry: &ToolRegistry) -> Vec<String> {
    registry
        .get_enabled_schemas()
        .iter()
        .map(|tool| embedding_text(tool, None))
        .collect()
}

fn names(found: &tool_core::agent::HybridMatches) -> Vec<&str> {
    found
        .matches
        .hits
        .iter()
        .map(|hit| hit.name.as_str())
        .collect()
}

fn tools(vectors: &[[f32; 3]]) -> Vec<&[f32]> {
    vectors.iter().map(|vector| &vector[..]).collect()
}

#[tokio::test]
async fn openai_compatible_embeddings_find_a_tool_by_meaning_and_are_computed_once() {
    let registry = registry();
    let server = Server::start(vec![
        openai_answer(&tools(&TOOL_VECTORS)),
        openai_answer(&[&QUERY_VECTOR]),
        openai_answer(&[&QUERY_VECTOR]),
        openai_answer(&[&[0.0, 0.7, 0.7]]),
        openai_answer(&[&QUERY_VECTOR]),
    ])
    .await;
    let mut endpoint = Endpoint::new(format!("{}/v1", server.url()), "text-embedding-3-small");
    endpoint.api_key = Some("sk-secret-embeddings-key".into());
    let embedder = OpenAiEmbedder::new(endpoint).unwrap();
    assert!(!format!("{embedder:?}").contains("sk-secret"));
    let hybrid = HybridSearch::new(embedder);

    let snapshot = registry.snapshot();
    assert!(snapshot.search(QUERY, 5).unwrap().hits.is_empty());
    let found = hybrid.search(&snapshot, QUERY, 1).await.unwrap();
    assert!(found.fallback.is_none());
    assert_eq!(names(&found), ["create_directory"]);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.uri, "/v1/embeddings");
        assert_eq!(
            request.header("authorization"),
            Some("Bearer sk-secret-embeddings-key")
        );
    }
    assert_eq!(
        requests[0].json(),
        json!({
            "model": "text-embedding-3-small",
            "input": tool_texts(&registry),
            "encoding_format": "float"
        })
    );
    assert_eq!(requests[1].json()["input"], json!([QUERY]));

    // The tools are embedded once: the next search embeds the query only.
    let found = hybrid.search(&snapshot, QUERY, 3).await.unwrap();
    assert_eq!(names(&found)[0], "create_directory");
    assert_eq!(found.matches.hits.len(), 3);
    assert_eq!(hybrid.embedded_tools(), 3);
    assert_eq!(server.requests().len(), 3);

    // A changed definition is embedded again, and only it.
    registry.unregister("get_weather");
    registry
        .register(Dumped(ChatTool::new(
            "get_weather",
            "The weather forecast for a town.",
            json!({"type": "object"}),
        )))
        .unwrap();
    let found = hybrid
        .search(&registry.snapshot(), "forecast", 2)
        .await
        .unwrap();
    assert_eq!(names(&found), ["get_weather", "create_directory"]);
    assert_eq!(hybrid.embedded_tools(), 4);
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(
        requests[3].json()["input"],
        json!([embedding_text(&registry.get_enabled_schemas()[2], None)])
    );
    assert_eq!(requests[4].json()["input"], json!(["forecast"]));
}

#[tokio::test]
async fn ollama_embed_answers_are_read() {
    let registry = registry();
    let answer = |vectors: &[&[f32]]| {
        Reply::json_owned(
            json!({
                "model": "all-minilm",
                "embeddings": vectors,
                "total_duration": 14_143_917,
                "load_duration": 1_019_500,
                "prompt_eval_count": 8
            })
            .to_string(),
        )
    };
    let server = Server::start(vec![
        answer(&tools(&TOOL_VECTORS)),
        answer(&[&QUERY_VECTOR]),
    ])
    .await;
    let embedder = OllamaEmbedder::new(Endpoint::new(server.url(), "all-minilm")).unwrap();
    let hybrid = HybridSearch::new(embedder);
    let found = hybrid.search(&registry.snapshot(), QUERY, 1).await.unwrap();
    assert!(found.fallback.is_none(), "{:?}", found.fallback);
    assert_eq!(names(&found), ["create_directory"]);
    let requests = server.requests();
    assert_eq!(requests[0].uri, "/api/embed");
    assert_eq!(
        requests[0].json(),
        json!({"model": "all-minilm", "input": tool_texts(&registry)})
    );
    assert_eq!(requests[1].json()["input"], json!([QUERY]));
}

#[tokio::test]
async fn gemini_batch_embed_answers_are_read() {
    let registry = registry();
    let answer = |vectors: &[&[f32]]| {
        let embeddings: Vec<Value> = vectors
            .iter()
            .map(|vector| json!({"values": vector}))
            .collect();
        Reply::json_owned(json!({ "embeddings": embeddings }).to_string())
    };
    let server = Server::start(vec![
        answer(&tools(&TOOL_VECTORS)),
        answer(&[&QUERY_VECTOR]),
    ])
    .await;
    let mut endpoint = Endpoint::new(format!("{}/v1beta", server.url()), "gemini-embedding-001");
    assert!(
        GeminiEmbedder::new(endpoint.clone()).is_err(),
        "a key is required"
    );
    endpoint.api_key = Some("gemini-secret-key".into());
    let hybrid = HybridSearch::new(GeminiEmbedder::new(endpoint).unwrap());
    let found = hybrid.search(&registry.snapshot(), QUERY, 1).await.unwrap();
    assert!(found.fallback.is_none(), "{:?}", found.fallback);
    assert_eq!(names(&found), ["create_directory"]);
    let requests = server.requests();
    assert_eq!(
        requests[0].uri,
        "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    );
    assert_eq!(
        requests[0].header("x-goog-api-key"),
        Some("gemini-secret-key")
    );
    let texts = tool_texts(&registry);
    assert_eq!(
        requests[0].json(),
        json!({"requests": texts.iter().map(|text| json!({
            "model": "models/gemini-embedding-001",
            "content": {"parts": [{"text": text}]}
        })).collect::<Vec<_>>()})
    );
}

/// Each way an embedder can fail leaves the search with the lexical ranking, says why, and
/// never shows the key.
#[tokio::test]
async fn a_failing_embedder_falls_back_to_the_lexical_ranking() {
    let registry = registry();
    type Case = (&'static str, Vec<Reply>, fn(&EmbedError) -> bool);
    let cases: Vec<Case> = vec![
        (
            "bad status",
            vec![Reply::error(
                401,
                br#"{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}"#,
            )],
            |error| {
                matches!(
                    error,
                    EmbedError::Provider(ProviderError::Api {
                        status: Some(401),
                        ..
                    })
                )
            },
        ),
        (
            "server error after retries",
            vec![
                Reply::error(500, br#"{"error": {"message": "overloaded"}}"#),
                Reply::error(500, br#"{"error": {"message": "overloaded"}}"#),
            ],
            |error| {
                matches!(
                    error,
                    EmbedError::Provider(ProviderError::Unavailable { status: 500, .. })
                )
            },
        ),
        (
            "fewer vectors than texts",
            vec![openai_answer(&tools(&TOOL_VECTORS[..2]))],
            |error| matches!(error, EmbedError::Count { expected: 3, got: 2 }),
        ),
        (
            "a vector of another dimension",
            vec![openai_answer(&[&[1.0, 0.0, 0.0], &[0.0, 1.0], &[0.0, 0.0, 1.0]])],
            |error| matches!(error, EmbedError::Dimension { expected: 3, got: 2 }),
        ),
        (
            "a query of another dimension",
            vec![
                openai_answer(&tools(&TOOL_VECTORS)),
                openai_answer(&[&[1.0, 0.0, 0.0, 0.0]]),
            ],
            |error| matches!(error, EmbedError::Dimension { expected: 3, got: 4 }),
        ),
        (
            "not the API's shape",
            vec![Reply::json(br#"{"embeddings": [[1, 2, 3]]}"#)],
            |error| matches!(error, EmbedError::Provider(ProviderError::Protocol { .. })),
        ),
    ];
    for (case, replies, expected) in cases {
        let server = Server::start(replies).await;
        let mut endpoint = Endpoint::new(format!("{}/v1", server.url()), "m");
        endpoint.api_key = Some("sk-never-shown".into());
        endpoint.http = fast_retries().max_retries(1);
        let hybrid = HybridSearch::new(OpenAiEmbedder::new(endpoint).unwrap());
        let found = tokio::time::timeout(
            Duration::from_secs(20),
            hybrid.search(&registry.snapshot(), "email recipient", 2),
        )
        .await
        .expect("an answer in time")
        .unwrap();
        let error = found.fallback.as_ref().expect(case);
        assert!(expected(error), "{case}: {error:?}");
        assert!(
            !error.to_string().contains("sk-never-shown"),
            "{case}: {error}"
        );
        assert_eq!(names(&found), ["send_email"], "{case}");
    }
}

/// Through an agent: `search_tools` ranks by meaning, and with a dead embedder by words.
#[tokio::test]
async fn an_agents_search_tool_uses_the_hybrid_ranking() {
    let server = Server::start(vec![
        openai_answer(&tools(&TOOL_VECTORS)),
        openai_answer(&[&QUERY_VECTOR]),
    ])
    .await;
    let embedder = OpenAiEmbedder::new(Endpoint::new(format!("{}/v1", server.url()), "m")).unwrap();
    let model = ScriptedModel::new([
        search("s1", QUERY),
        tool_core::model::ScriptedResponse::text("Found it."),
    ]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new()
            .registry(registry())
            .search_results(1)
            .hybrid_search(HybridSearch::new(embedder)),
    );
    tokio::time::timeout(Duration::from_secs(20), agent.chat("make a folder"))
        .await
        .expect("the turn ends")
        .unwrap();
    assert_eq!(
        result_of(&agent, "s1"),
        "Loaded; call them like any other tool:\n- create_directory: Create a directory, with \
         its parents."
    );
    assert_eq!(agent.loaded_tools(), ["create_directory"]);

    let dead = tool_core::model::HttpOptions::default().max_retries(0);
    let mut endpoint = Endpoint::new(
        format!("http://{}/v1", crate::loopback::closed_address()),
        "m",
    );
    endpoint.http = dead;
    let model = ScriptedModel::new([
        search("s1", "weather city"),
        tool_core::model::ScriptedResponse::text("Found it."),
    ]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new()
            .registry(registry())
            .search_results(1)
            .hybrid_search(HybridSearch::new(OpenAiEmbedder::new(endpoint).unwrap())),
    );
    tokio::time::timeout(Duration::from_secs(20), agent.chat("weather"))
        .await
        .expect("the turn ends")
        .unwrap();
    assert_eq!(
        result_of(&agent, "s1"),
        "Loaded; call them like any other tool:\n- get_weather: Current weather for a city."
    );
}
