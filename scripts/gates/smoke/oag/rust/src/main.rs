//! Smoke program of openapi-generator's `rust` clients with default options (package names only;
//! gate: scripts/gates/openapi-generator.mjs, which writes this crate's Cargo.toml depending on
//! the generated crates by path). Against a running server: lists contacts, uploads a local image
//! and sends it by its `media_id` (Messaging, X-API-Key), lists Connect documents with a bearer
//! token, starts a login session (Login, X-API-Key). Input: the environment of typescript-fetch.ts.
use std::{env, fmt::Debug, path::PathBuf, process::exit};

use chatapp_connect_oag as connect;
use chatapp_login_oag as login;
use chatapp_messaging_oag as messaging;

fn must<T, E: Debug>(step: &str, result: Result<T, E>) -> T {
    result.unwrap_or_else(|error| {
        let detail = format!("{error:?}");
        eprintln!("FAIL {step}: {}", &detail[..detail.len().min(400)]);
        exit(1)
    })
}

#[tokio::main]
async fn main() {
    let names = ["CHATAPP_BASE_URL", "MESSAGING_API_KEY", "CHATAPP_SENDER", "CHATAPP_CONTACT", "CHATAPP_IMAGE", "CONNECT_ACCESS_TOKEN", "LOGIN_API_KEY"];
    let missing: Vec<&str> = names.iter().copied().filter(|n| env::var(n).map(|v| v.is_empty()).unwrap_or(true)).collect();
    if !missing.is_empty() {
        eprintln!("FAIL missing environment: {}", missing.join(", "));
        exit(1);
    }
    let var = |name: &str| env::var(name).unwrap();
    let base = var("CHATAPP_BASE_URL");

    // Messaging API keys go in X-API-Key (the ApiKeyHeader scheme).
    let mut m = messaging::apis::configuration::Configuration::new();
    m.base_path = base.clone();
    m.api_key = Some(messaging::apis::configuration::ApiKey { prefix: None, key: var("MESSAGING_API_KEY") });
    let contacts = must("list contacts", messaging::apis::contacts_api::list_contacts(&m, Some(10), None, None, None, None, None, None).await);
    let numbers: Vec<&str> = contacts.data.iter().map(|c| c.contact_no.as_str()).collect();
    println!("messaging: listed {} contact(s): {}", contacts.data.len(), numbers.join(", "));

    let image = PathBuf::from(var("CHATAPP_IMAGE"));
    let upload = must("upload media", messaging::apis::messages_api::upload_media(&m, &var("CHATAPP_SENDER"), image.clone()).await);
    println!("messaging: uploaded {} as {} ({}, {} bytes)", image.file_name().unwrap().to_string_lossy(), upload.id, upload.mime_type, upload.size_bytes);
    let mut body = messaging::models::SendImageMessage::new(var("CHATAPP_CONTACT"), var("CHATAPP_SENDER"), messaging::models::send_image_message::MessageType::Image);
    body.media_id = Some(upload.id.clone());
    body.message = Some("A photo from the rust client".into());
    let sent = must("send by media_id", messaging::apis::messages_api::send_message(&m, messaging::models::SendMessageRequest::Image(Box::new(body)), None).await);
    println!("messaging: sent {} (image, media {}), status {:?}", sent.id, upload.id, sent.status);

    // Connect: the access token goes in Authorization: Bearer (the ConnectOAuth scheme).
    let mut c = connect::apis::configuration::Configuration::new();
    c.base_path = base.clone();
    c.oauth_access_token = Some(var("CONNECT_ACCESS_TOKEN"));
    let documents = must("list documents", connect::apis::documents_api::list_documents(&c, Some(10), None).await);
    println!("connect: listed {} document(s) with the bearer token", documents.data.len());

    let mut l = login::apis::configuration::Configuration::new();
    l.base_path = base;
    l.api_key = Some(login::apis::configuration::ApiKey { prefix: None, key: var("LOGIN_API_KEY") });
    let started = must("start login", login::apis::login_sessions_api::start_login_session(&l, Some(login::models::LoginSessionStart::new())).await);
    println!("login: started {} (code {})", started.session_id, started.login_code);
    println!("rust smoke: OK");
}
