//! Frame codec throughput: `switchboard_core::wire` encoding and decoding `Data` frames against
//! the cheapest possible framing in the same run (group members `baseline_u32_len_copy`: a
//! `u32` length followed by the payload, encoded by copying and decoded by slicing).
//!
//! Each iteration encodes a batch of frames into one reused buffer (cleared, never shrunk) and
//! decodes the whole buffer again, touching every decoded field so nothing is optimised away.
//!
//! - `codec_1KiB_payload/*`: 64 frames of 1 KiB payload per iteration, reported in bytes of
//!   payload per second (target: ≥ 1 GB/s for `wire_encode_decode`).
//! - `codec_64B_payload/*`: 256 frames of 64-byte payload per iteration, reported in frames per
//!   second (target: ≥ 10 M frames/s for `wire_encode_decode`).
//!
//! Members: `wire_encode_decode` (`wire::encode` + a `wire::decode` loop over the buffer),
//! `wire_encode_reader` (the same, decoded through a `FrameReader` fed 64 KiB chunks, as a link
//! delivers them), and the baseline. After criterion's report a short table prints the median
//! of each member and its ratio to the baseline.
//!
//! Run: `cargo bench -p switchboard-benches --bench codec`.

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use criterion::{BenchmarkId, Criterion, Throughput};
use switchboard_core::{
    ids::NodeId,
    wire::{self, Data, Decoded, Frame, FrameReader},
};

const MAX_FRAME: usize = wire::DEFAULT_MAX_FRAME;
const READER_CHUNK: usize = 64 * 1024;

/// One batch shape: payload size and frames per iteration.
#[derive(Clone, Copy)]
struct Shape {
    group: &'static str,
    payload: usize,
    frames: usize,
    per_byte: bool,
}

const SHAPES: [Shape; 2] = [
    Shape {
        group: "codec_1KiB_payload",
        payload: 1024,
        frames: 64,
        per_byte: true,
    },
    Shape {
        group: "codec_64B_payload",
        payload: 64,
        frames: 256,
        per_byte: false,
    },
];

/// The contenders; each runs one encode + decode pass over a batch and returns a checksum.
#[derive(Clone, Copy)]
enum Member {
    Wire,
    WireReader,
    Baseline,
}

impl Member {
    const ALL: [Member; 3] = [Member::Wire, Member::WireReader, Member::Baseline];

    fn name(self) -> &'static str {
        match self {
            Member::Wire => "wire_encode_decode",
            Member::WireReader => "wire_encode_reader",
            Member::Baseline => "baseline_u32_len_copy",
        }
    }
}

/// Buffers kept across iterations (capacity reused).
struct Bench {
    payload: Vec<u8>,
    frames: usize,
    buf: Vec<u8>,
    reader: FrameReader,
}

impl Bench {
    fn new(shape: Shape) -> Bench {
        let payload: Vec<u8> = (0..shape.payload).map(|i| (i * 31 % 251) as u8).collect();
        Bench {
            payload,
            frames: shape.frames,
            buf: Vec::with_capacity(shape.frames * (shape.payload + 64)),
            reader: FrameReader::new(MAX_FRAME),
        }
    }

    fn run(&mut self, member: Member) -> u64 {
        match member {
            Member::Wire => {
                self.encode_wire();
                decode_wire(&self.buf)
            }
            Member::WireReader => {
                self.encode_wire();
                self.decode_reader()
            }
            Member::Baseline => {
                self.encode_baseline();
                decode_baseline(&self.buf)
            }
        }
    }

    fn encode_wire(&mut self) {
        self.buf.clear();
        for seq in 0..self.frames as u64 {
            let frame = Frame::Data(Data {
                src: NodeId(1),
                dst: NodeId(2),
                seq,
                dst_incarnation: 0,
                retransmit: false,
                msg_type: 7,
                hop_count: 0,
                payload: black_box(&self.payload),
            });
            wire::encode(&frame, &mut self.buf).expect("bench frames are small");
        }
    }

    fn decode_reader(&mut self) -> u64 {
        let mut sum = 0u64;
        for chunk in self.buf.chunks(READER_CHUNK) {
            self.reader.push(chunk);
            while let Some(frame) = self.reader.next_frame().expect("valid stream") {
                if let Frame::Data(data) = frame {
                    sum = sum.wrapping_add(checksum(data.seq, data.payload));
                }
            }
        }
        sum
    }

    fn encode_baseline(&mut self) {
        self.buf.clear();
        for _ in 0..self.frames {
            let payload = black_box(&self.payload);
            let len = u32::try_from(payload.len()).expect("small payload");
            self.buf.reserve(4 + payload.len());
            self.buf.extend_from_slice(&len.to_le_bytes());
            self.buf.extend_from_slice(payload);
        }
    }
}

fn checksum(seq: u64, payload: &[u8]) -> u64 {
    seq ^ payload.len() as u64 ^ u64::from(payload.first().copied().unwrap_or(0))
}

fn decode_wire(mut buf: &[u8]) -> u64 {
    let mut sum = 0u64;
    while let Ok(Decoded::Frame(frame, used)) = wire::decode(buf, MAX_FRAME) {
        if let Frame::Data(data) = frame {
            sum = sum.wrapping_add(checksum(data.seq, data.payload));
        }
        buf = &buf[used..];
    }
    sum
}

fn decode_baseline(mut buf: &[u8]) -> u64 {
    let mut sum = 0u64;
    let mut seq = 0;
    while let Some((len, rest)) = buf.split_first_chunk::<4>() {
        let len = u32::from_le_bytes(*len) as usize;
        let Some(payload) = rest.get(..len) else {
            break;
        };
        sum = sum.wrapping_add(checksum(seq, payload));
        seq += 1;
        buf = &rest[len..];
    }
    sum
}

fn bench_codec(c: &mut Criterion) {
    for shape in SHAPES {
        let mut group = c.benchmark_group(shape.group);
        group
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .sample_size(30);
        if shape.per_byte {
            group.throughput(Throughput::Bytes((shape.frames * shape.payload) as u64));
        } else {
            group.throughput(Throughput::Elements(shape.frames as u64));
        }
        for member in Member::ALL {
            let mut bench = Bench::new(shape);
            group.bench_function(BenchmarkId::from_parameter(member.name()), |b| {
                b.iter(|| black_box(bench.run(member)));
            });
        }
        group.finish();
    }
}

/// Median time of one batch over `samples` samples of `iters` batches each.
fn median_batch(bench: &mut Bench, member: Member, samples: usize, iters: u32) -> Duration {
    let mut times: Vec<Duration> = (0..samples)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(bench.run(member));
            }
            start.elapsed() / iters
        })
        .collect();
    times.sort_unstable();
    times[samples / 2]
}

/// The side-by-side table: median per member, its rate and its ratio to the baseline.
fn print_ratios() {
    println!("\ncodec summary (median of 21 samples):");
    for shape in SHAPES {
        let mut medians = Vec::new();
        for member in Member::ALL {
            let mut bench = Bench::new(shape);
            for _ in 0..200 {
                black_box(bench.run(member));
            }
            medians.push((member, median_batch(&mut bench, member, 21, 200)));
        }
        let baseline = medians
            .iter()
            .find(|(m, _)| matches!(m, Member::Baseline))
            .map(|&(_, t)| t)
            .expect("baseline measured");
        for (member, t) in medians {
            let secs = t.as_secs_f64();
            let rate = if shape.per_byte {
                format!(
                    "{:.2} GB/s",
                    (shape.frames * shape.payload) as f64 / secs / 1e9
                )
            } else {
                format!("{:.1} M frames/s", shape.frames as f64 / secs / 1e6)
            };
            println!(
                "  {}/{:<22} {:>10.2?}/batch  {:>16}  {:.2}x baseline time",
                shape.group,
                member.name(),
                t,
                rate,
                secs / baseline.as_secs_f64()
            );
        }
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench_codec(&mut criterion);
    criterion.final_summary();
    // Only under `cargo bench` (which passes `--bench`), not when run as a smoke test.
    if std::env::args().any(|arg| arg == "--bench") {
        print_ratios();
    }
}
