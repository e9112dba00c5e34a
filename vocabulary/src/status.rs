//! gRPC status codes by their canonical names, and the error an xDS
//! watcher hears (a code and a message).

use std::fmt;

use tonic::Code;

/// Every gRPC status code with its canonical upper-case name, in code order.
pub const STATUS_CODES: [(&str, Code); 17] = [
    ("OK", Code::Ok),
    ("CANCELLED", Code::Cancelled),
    ("UNKNOWN", Code::Unknown),
    ("INVALID_ARGUMENT", Code::InvalidArgument),
    ("DEADLINE_EXCEEDED", Code::DeadlineExceeded),
    ("NOT_FOUND", Code::NotFound),
    ("ALREADY_EXISTS", Code::AlreadyExists),
    ("PERMISSION_DENIED", Code::PermissionDenied),
    ("RESOURCE_EXHAUSTED", Code::ResourceExhausted),
    ("FAILED_PRECONDITION", Code::FailedPrecondition),
    ("ABORTED", Code::Aborted),
    ("OUT_OF_RANGE", Code::OutOfRange),
    ("UNIMPLEMENTED", Code::Unimplemented),
    ("INTERNAL", Code::Internal),
    ("UNAVAILABLE", Code::Unavailable),
    ("DATA_LOSS", Code::DataLoss),
    ("UNAUTHENTICATED", Code::Unauthenticated),
];

/// The canonical upper-case name of a gRPC status code.
pub fn code_name(code: Code) -> &'static str {
    // The table is in code order, and `Code` has exactly these 17 values.
    STATUS_CODES[code as usize].0
}

/// The status code with this canonical name (`UNAVAILABLE`).
pub fn code_from_name(name: &str) -> Option<Code> {
    STATUS_CODES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, code)| *code)
}

/// A gRPC status as an xDS watcher sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdsError {
    pub code: Code,
    pub message: String,
}

impl XdsError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        XdsError {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for XdsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", code_name(self.code), self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_code_order_and_round_trips() {
        for (index, (name, code)) in STATUS_CODES.iter().enumerate() {
            assert_eq!(*code as usize, index);
            assert_eq!(Code::from_i32(index as i32), *code);
            assert_eq!(code_name(*code), *name);
            assert_eq!(code_from_name(name), Some(*code));
        }
        assert_eq!(code_from_name("unavailable"), None);
    }

    #[test]
    fn an_error_displays_as_code_and_message() {
        let e = XdsError::new(Code::NotFound, "does not exist");
        assert_eq!(e.to_string(), "NOT_FOUND: does not exist");
    }
}
