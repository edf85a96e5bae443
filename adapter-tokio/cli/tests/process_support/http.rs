//! A tiny blocking HTTP/1.0 client for a node's admin port, and a parser for the Prometheus
//! text lines the tests assert on.
//!
//! HTTP/1.0 keeps the exchange trivial: one request per connection, the server closes after
//! the response, no chunking expected (a chunked body is still decoded, in case). Connect,
//! read and write are bounded by [`HTTP_TIMEOUT`].

use std::{
    collections::BTreeMap,
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

/// Bound on connecting, each read and each write.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(5);

/// A response: status code, headers (names lower-cased) and the body as text.
#[derive(Debug)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
}

/// `GET path` from `addr`.
///
/// # Errors
///
/// A connect, I/O or parse failure, described (tests that poll a restarting node retry).
pub fn http_get(addr: SocketAddr, path: &str) -> Result<HttpResponse, String> {
    exchange(
        addr,
        path,
        &format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: */*\r\n\r\n"),
    )
}

/// `POST path` to `addr` with a JSON `body` (etcd's JSON gateway).
///
/// # Errors
///
/// A connect, I/O or parse failure, described.
pub fn http_post_json(addr: SocketAddr, path: &str, body: &str) -> Result<HttpResponse, String> {
    exchange(
        addr,
        path,
        &format!(
            "POST {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: */*\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// Sends `request` to `addr` on a new connection and reads the response until it closes.
fn exchange(addr: SocketAddr, path: &str, request: &str) -> Result<HttpResponse, String> {
    let mut stream = TcpStream::connect_timeout(&addr, HTTP_TIMEOUT)
        .map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(HTTP_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(HTTP_TIMEOUT)))
        .map_err(|e| format!("set timeouts: {e}"))?;
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("write request to {addr}: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("read response from {addr}{path}: {e}"))?;
    let method = request.split(' ').next().unwrap_or("");
    parse_response(&raw).map_err(|e| format!("{method} {addr}{path}: {e}"))
}

/// `GET path` from `addr`, which must answer 200.
///
/// # Panics
///
/// Any failure or another status; the message carries the body.
#[must_use]
pub fn get_ok(addr: SocketAddr, path: &str) -> String {
    let response = http_get(addr, path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        response.status, 200,
        "GET {addr}{path}: status {} body {:?}",
        response.status, response.body
    );
    response.body
}

/// Parses a raw HTTP/1.x response (status line, headers, body; a chunked body is decoded).
///
/// # Errors
///
/// No end of headers, a bad status line, a bad chunk, or a body that is not UTF-8.
pub fn parse_response(raw: &[u8]) -> Result<HttpResponse, String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no end of headers in {:?}", String::from_utf8_lossy(raw)))?;
    let head = std::str::from_utf8(&raw[..split]).map_err(|e| format!("headers: {e}"))?;
    let body = &raw[split + 4..];
    let mut head_lines = head.split("\r\n");
    let status_line = head_lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let headers: Vec<(String, String)> = head_lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && value.contains("chunked"));
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    let body = String::from_utf8(body).map_err(|e| format!("body is not UTF-8: {e}"))?;
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("chunk size line without CRLF")?;
        let size_text = std::str::from_utf8(&rest[..end]).map_err(|e| e.to_string())?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|e| format!("chunk size {size_text:?}: {e}"))?;
        rest = &rest[end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = rest.get(..size).ok_or("chunk shorter than its size")?;
        body.extend_from_slice(chunk);
        rest = rest.get(size + 2..).ok_or("chunk without trailing CRLF")?;
    }
}

/// One sample line of Prometheus text: `name{label="value",...} value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Metric name.
    pub name: String,
    /// Labels by name.
    pub labels: BTreeMap<String, String>,
    /// The value.
    pub value: f64,
}

/// Every sample line of `text` (comments and blank lines skipped).
///
/// # Panics
///
/// A line that is not a well-formed sample: the exposition is the contract under test.
#[must_use]
pub fn parse_prometheus(text: &str) -> Vec<Sample> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| parse_sample(line).unwrap_or_else(|e| panic!("bad metrics line {line:?}: {e}")))
        .collect()
}

fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .ok_or("no value")?;
    let name = line[..name_end].to_owned();
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(after_brace) = rest.strip_prefix('{') {
        rest = after_brace;
        loop {
            rest = rest.trim_start_matches([',', ' ']);
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            let (key, after_key) = rest.split_once("=\"").ok_or("label without =\"")?;
            let (value, after_value) = unquote(after_key)?;
            labels.insert(key.trim().to_owned(), value);
            rest = after_value;
        }
    }
    let value_text = rest.split_whitespace().next().ok_or("no value")?;
    let value = match value_text {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        text => text
            .parse::<f64>()
            .map_err(|e| format!("value {text:?}: {e}"))?,
    };
    Ok(Sample {
        name,
        labels,
        value,
    })
}

/// Reads a label value up to its closing quote; returns it unescaped and the text after.
fn unquote(text: &str) -> Result<(String, &str), String> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Ok((value, &text[at + 1..])),
            '\\' => match chars.next() {
                Some((_, 'n')) => value.push('\n'),
                Some((_, escaped)) => value.push(escaped),
                None => return Err("dangling backslash".into()),
            },
            c => value.push(c),
        }
    }
    Err("unterminated label value".into())
}

/// The value of the one sample named `name` whose labels include every pair of `labels`, as
/// an exact counter value; `None` if no sample matches.
///
/// # Panics
///
/// Several samples match, or the value is not a non-negative integer.
#[must_use]
pub fn counter(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<u64> {
    let mut matching = samples.iter().filter(|s| {
        s.name == name
            && labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).is_some_and(|have| have == v))
    });
    let found = matching.next()?;
    if let Some(other) = matching.next() {
        panic!("{name}{labels:?} is ambiguous: {found:?} and {other:?}");
    }
    Some(as_count(found))
}

/// The sum of every sample named `name` (all label sets), as an exact count.
///
/// # Panics
///
/// A value is not a non-negative integer.
#[must_use]
pub fn counter_sum(samples: &[Sample], name: &str) -> u64 {
    samples
        .iter()
        .filter(|s| s.name == name)
        .map(as_count)
        .sum()
}

fn as_count(sample: &Sample) -> u64 {
    let value = sample.value;
    assert!(
        value >= 0.0 && value.fract() == 0.0 && value < 9.0e15,
        "{sample:?} is not a count"
    );
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "checked above: a non-negative integer below 2^53"
    )]
    let count = value as u64;
    count
}
