//! The JSON-lines codec of `ADAPTER_PROTOCOL.md`: one stdout line of an
//! adapter decoded (`parse_line`), and an observed event as the line an
//! adapter prints (`event_line`).

use super::*;

#[derive(Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(super) enum EventLine {
    /// Only valid as the first line; here it is recognised to be refused.
    Hello(serde::de::IgnoredAny),
    ChannelState {
        target: String,
        state: String,
    },
    Watcher {
        #[serde(rename = "type")]
        resource_type: String,
        name: String,
        kind: String,
        #[serde(default)]
        summary: String,
        /// For `changed`: the resource as a base64 `google.protobuf.Any`,
        /// summarised here as the reference client does.
        #[serde(default)]
        resource: Option<String>,
        #[serde(default)]
        code: Option<String>,
        #[serde(default)]
        message: String,
    },
    Log {
        level: String,
        #[serde(default)]
        message: String,
    },
    ServingStatus {
        address: String,
        state: String,
        #[serde(default)]
        code: Option<String>,
        #[serde(default)]
        message: String,
    },
}

#[derive(Deserialize)]
pub(super) struct RpcResult {
    pub(super) code: String,
    #[serde(default)]
    pub(super) message: String,
    #[serde(default)]
    pub(super) backend: Option<String>,
}

/// One stdout line of an adapter, decoded: the harness's half of the line
/// codec of `ADAPTER_PROTOCOL.md`.
#[derive(Clone, Debug, PartialEq)]
pub enum AdapterLine {
    Hello(AdapterHello),
    /// The reply to command `id`; `fields` is the whole line (a command's
    /// results are fields of its reply).
    Reply {
        id: u64,
        ok: bool,
        /// The adapter's `error`; empty when ok.
        error: String,
        fields: Map<String, Value>,
    },
    Event(ObservedEvent),
}

/// Why a stdout line breaks the protocol. `line` is an excerpt of it:
/// bounded and printable, for the reason the client is broken.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("printed a line that is not JSON ({error}): {line}")]
    NotJson {
        error: serde_json::Error,
        line: String,
    },
    #[error("printed a line that is neither a reply nor an event: {line}")]
    NeitherReplyNorEvent { line: String },
    #[error("printed a line before hello: {line}")]
    BeforeHello { line: String },
    #[error("sent a malformed hello ({error}): {line}")]
    MalformedHello {
        error: serde_json::Error,
        line: String,
    },
    #[error("speaks adapter protocol {said} (the harness speaks {PROTOCOL_VERSION})")]
    WrongProtocol { said: u64 },
    #[error("sent a reply whose id is not an integer: {line}")]
    IdNotInteger { line: String },
    #[error("sent a reply without a boolean `ok`: {line}")]
    NoOk { line: String },
    #[error("sent a malformed event ({error}): {line}")]
    MalformedEvent {
        error: serde_json::Error,
        line: String,
    },
    #[error("{problem}: {line}")]
    BadEvent { problem: EventProblem, line: String },
}

/// What is wrong with an event line that has the right shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EventProblem {
    #[error("sent a second hello")]
    SecondHello,
    #[error("sent an unknown channel state {0:?}")]
    UnknownChannelState(String),
    #[error("sent an unknown resource type {0:?}")]
    UnknownResourceType(String),
    #[error("sent a {0} watcher event without a `code`")]
    WatcherWithoutCode(String),
    #[error("sent an unknown status code {0:?}")]
    UnknownCode(String),
    #[error("sent an unknown watcher event kind {0:?}")]
    UnknownWatcherKind(String),
    #[error("sent an unknown log level {0:?}")]
    UnknownLogLevel(String),
    #[error("sent a NOT_SERVING serving_status event without a `code`")]
    NotServingWithoutCode,
    #[error("sent an unknown serving state {0:?}")]
    UnknownServingState(String),
    #[error("sent a watcher `resource` that is not a base64 google.protobuf.Any: {0}")]
    BadResource(String),
}

/// A watcher event's `resource` (a base64 `google.protobuf.Any`),
/// summarised as the reference client summarises what it accepted, so
/// timelines compare across clients.
pub(super) fn summarise(
    resource_type: ResourceType,
    encoded: &str,
) -> Result<String, EventProblem> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| EventProblem::BadResource(e.to_string()))?;
    let any = <envoy_types::pb::google::protobuf::Any as prost::Message>::decode(bytes.as_slice())
        .map_err(|e| EventProblem::BadResource(e.to_string()))?;
    Ok(
        crate::summary::of_entry(resource_type, &any).unwrap_or_else(|e| {
            format!(
                "{} ({} bytes, accepted by the client; the reference client would reject it: {e})",
                resource_type.short_name(),
                any.value.len()
            )
        }),
    )
}

/// Decodes one stdout line (without its `\n`); `expecting_hello`: no
/// line came before it, so it must be the hello.
pub fn parse_line(line: &[u8], expecting_hello: bool) -> Result<AdapterLine, LineError> {
    let value: Value = serde_json::from_slice(line).map_err(|error| LineError::NotJson {
        error,
        line: excerpt(line),
    })?;
    let Value::Object(object) = value else {
        return Err(LineError::NeitherReplyNorEvent {
            line: excerpt(line),
        });
    };

    if expecting_hello {
        if object.get("event").and_then(Value::as_str) != Some("hello") {
            return Err(LineError::BeforeHello {
                line: excerpt(line),
            });
        }
        let said: AdapterHello =
            serde_json::from_value(Value::Object(object)).map_err(|error| {
                LineError::MalformedHello {
                    error,
                    line: excerpt(line),
                }
            })?;
        if said.protocol != PROTOCOL_VERSION {
            return Err(LineError::WrongProtocol {
                said: said.protocol,
            });
        }
        return Ok(AdapterLine::Hello(said));
    }

    if let Some(id) = object.get("id") {
        let id = id.as_u64().ok_or_else(|| LineError::IdNotInteger {
            line: excerpt(line),
        })?;
        let ok = object
            .get("ok")
            .and_then(Value::as_bool)
            .ok_or_else(|| LineError::NoOk {
                line: excerpt(line),
            })?;
        let error = match object.get("error") {
            Some(Value::String(error)) => error.clone(),
            _ if ok => String::new(),
            _ => "(the adapter gave no error text)".into(),
        };
        return Ok(AdapterLine::Reply {
            id,
            ok,
            error,
            fields: object,
        });
    }

    if object.contains_key("event") {
        let event: EventLine = serde_json::from_value(Value::Object(object)).map_err(|error| {
            LineError::MalformedEvent {
                error,
                line: excerpt(line),
            }
        })?;
        return observed_event(event)
            .map(AdapterLine::Event)
            .map_err(|problem| LineError::BadEvent {
                problem,
                line: excerpt(line),
            });
    }

    Err(LineError::NeitherReplyNorEvent {
        line: excerpt(line),
    })
}

pub(super) fn observed_event(event: EventLine) -> Result<ObservedEvent, EventProblem> {
    match event {
        EventLine::Hello(_) => Err(EventProblem::SecondHello),
        EventLine::ChannelState { target, state } => {
            let state = crate::ConnectivityState::parse(&state)
                .ok_or(EventProblem::UnknownChannelState(state))?;
            Ok(ObservedEvent::ChannelState { target, state })
        }
        EventLine::Watcher {
            resource_type,
            name,
            kind,
            summary,
            resource,
            code,
            message,
        } => {
            let parsed_type = ResourceType::parse(&resource_type)
                .ok_or_else(|| EventProblem::UnknownResourceType(resource_type.clone()))?;
            let error = || -> Result<XdsError, EventProblem> {
                let code = code
                    .as_deref()
                    .ok_or_else(|| EventProblem::WatcherWithoutCode(kind.clone()))?;
                let code = code_from_name(code)
                    .ok_or_else(|| EventProblem::UnknownCode(code.to_string()))?;
                Ok(XdsError::new(code, message.clone()))
            };
            let notification = match kind.as_str() {
                "changed" => WatcherNotification::Changed {
                    summary: match resource {
                        Some(encoded) => summarise(parsed_type, &encoded)?,
                        None => summary,
                    },
                },
                "resource_error" => WatcherNotification::ResourceError(error()?),
                "ambient_error" => WatcherNotification::AmbientError(error()?),
                "ambient_error_cleared" => WatcherNotification::AmbientErrorCleared,
                "does_not_exist" => WatcherNotification::DoesNotExist,
                _ => return Err(EventProblem::UnknownWatcherKind(kind)),
            };
            Ok(ObservedEvent::Watcher {
                resource_type: parsed_type,
                name,
                notification,
            })
        }
        EventLine::Log { level, message } => {
            let level = match level.to_ascii_lowercase().as_str() {
                "info" => LogLevel::Info,
                "warning" => LogLevel::Warning,
                "error" => LogLevel::Error,
                _ => return Err(EventProblem::UnknownLogLevel(level)),
            };
            Ok(ObservedEvent::Client(ClientEvent::Log { level, message }))
        }
        EventLine::ServingStatus {
            address,
            state,
            code,
            message,
        } => {
            let status = match state.as_str() {
                "SERVING" => Ok(()),
                "NOT_SERVING" => {
                    let code = code.as_deref().ok_or(EventProblem::NotServingWithoutCode)?;
                    let code = code_from_name(code)
                        .ok_or_else(|| EventProblem::UnknownCode(code.to_string()))?;
                    Err(XdsError::new(code, message))
                }
                _ => return Err(EventProblem::UnknownServingState(state)),
            };
            Ok(ObservedEvent::ServingStatus { address, status })
        }
    }
}

/// The adapter's half of the codec: the event line an adapter prints for
/// `event`, for the events the protocol has (`None` for the others, which
/// an adapter reports on stderr if at all). [`parse_line`] reads it back
/// as the same event.
pub fn event_line(event: &ObservedEvent) -> Option<Value> {
    let error_fields = |line: &mut Value, e: &XdsError| {
        line["code"] = json!(code_name(e.code));
        line["message"] = json!(e.message);
    };
    Some(match event {
        ObservedEvent::Watcher {
            resource_type,
            name,
            notification,
        } => {
            let mut line = json!({
                "event": "watcher",
                "type": resource_type.type_url(),
                "name": name,
            });
            match notification {
                WatcherNotification::Changed { summary } => {
                    line["kind"] = json!("changed");
                    line["summary"] = json!(summary);
                }
                WatcherNotification::ResourceError(e) => {
                    line["kind"] = json!("resource_error");
                    error_fields(&mut line, e);
                }
                WatcherNotification::AmbientError(e) => {
                    line["kind"] = json!("ambient_error");
                    error_fields(&mut line, e);
                }
                WatcherNotification::AmbientErrorCleared => {
                    line["kind"] = json!("ambient_error_cleared");
                }
                WatcherNotification::DoesNotExist => line["kind"] = json!("does_not_exist"),
            }
            line
        }
        ObservedEvent::ServingStatus { address, status } => {
            let mut line = json!({"event": "serving_status", "address": address});
            match status {
                Ok(()) => line["state"] = json!("SERVING"),
                Err(e) => {
                    line["state"] = json!("NOT_SERVING");
                    error_fields(&mut line, e);
                }
            }
            line
        }
        ObservedEvent::ChannelState { target, state } => {
            json!({"event": "channel_state", "target": target, "state": state.name()})
        }
        ObservedEvent::Client(ClientEvent::Log { level, message }) => {
            let level = match level {
                LogLevel::Info => "info",
                LogLevel::Warning => "warning",
                LogLevel::Error => "error",
            };
            json!({"event": "log", "level": level, "message": message})
        }
        ObservedEvent::Dial { .. }
        | ObservedEvent::Admin(_)
        | ObservedEvent::Client(_)
        | ObservedEvent::Zone(_) => {
            return None;
        }
    })
}

/// A line as it can appear in a reason: bounded, printable (control
/// characters, which an adapter printing garbage sends too, become spaces,
/// so a reason never breaks a report's line or a terminal).
pub(super) fn excerpt(line: &[u8]) -> String {
    const MAX: usize = 200;
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end();
    let printable = |text: &str| -> String {
        text.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect()
    };
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", printable(&text[..cut])),
        None => printable(text),
    }
}
