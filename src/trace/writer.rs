//! The Chrome JSON text: header, track metadata, `X` events, and one track's
//! buffer with its pending run of same-stage tasks.

use crate::graph::{Cost, Lane};
use std::fmt::Write as _;

/// Bytes a track buffers before appending them to the file (32 KiB: one
/// `write` per a few hundred task events, and a few tracks' worth is still
/// small next to anything a traced run allocates).
pub const TRACK_BUFFER: usize = 32 * 1024;

/// Closes the event array, adds `displayTimeUnit` (the Trace Event Format's
/// object form: the viewer shows milliseconds; the events' `ts` and `dur` stay
/// in microseconds, the format's fixed unit) and the run facts as `otherData`,
/// and closes the top-level object, all on one line. Both keys come after the
/// events: streaming readers that stop at the first key they do not know (older
/// Perfetto) have read every event by then.
pub(super) fn footer(level: &str, tasks: usize) -> String {
    format!(
        "\n],\n\"displayTimeUnit\":\"ms\",\"otherData\":{{\"trace_level\":\"{level}\",\"tasks\":{tasks}}}}}\n"
    )
}

/// The file's opening and the metadata events that name the processes and every
/// track. The first event is always there, so every later event starts with a
/// separator.
pub(super) fn header(threads: usize, streams: usize) -> String {
    let mut s = String::from(
        "{\"traceEvents\":[\n\
         {\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"cpu workers\"}}",
    );
    for w in 0..threads {
        let _ = write!(
            s,
            ",\n{{\"ph\":\"M\",\"pid\":1,\"tid\":{w},\"name\":\"thread_name\",\"args\":{{\"name\":\"cpu-{w}\"}}}}"
        );
    }
    if streams > 0 {
        s.push_str(
            ",\n{\"ph\":\"M\",\"pid\":2,\"name\":\"process_name\",\"args\":{\"name\":\"streams (host)\"}}",
        );
    }
    for t in 0..streams {
        let _ = write!(
            s,
            ",\n{{\"ph\":\"M\",\"pid\":2,\"tid\":{t},\"name\":\"thread_name\",\"args\":{{\"name\":\"stream-{t}\"}}}}"
        );
    }
    s
}

/// One slice of device work (see [`super::DeviceSlices`]): its track, what it
/// was, and nanoseconds from the start of the run.
pub(crate) struct DeviceSlice {
    pub track: usize,
    pub name: String,
    pub start: u64,
    pub end: u64,
}

/// The devices' process (pid 3, "devices"), a named thread per device track
/// used, and one `X` event per slice (category `device`), tracks in order and
/// each track's slices by start time.
pub(super) fn device_events(slices: &mut [DeviceSlice]) -> String {
    let mut s = String::new();
    if slices.is_empty() {
        return s;
    }
    slices.sort_by_key(|d| (d.track, d.start));
    s.push_str(
        ",\n{\"ph\":\"M\",\"pid\":3,\"name\":\"process_name\",\"args\":{\"name\":\"devices\"}}",
    );
    let mut last = None;
    for d in slices.iter() {
        if last != Some(d.track) {
            let t = d.track;
            let _ = write!(
                s,
                ",\n{{\"ph\":\"M\",\"pid\":3,\"tid\":{t},\"name\":\"thread_name\",\"args\":{{\"name\":\"device-{t}\"}}}}"
            );
            last = Some(d.track);
        }
        let _ = write!(s, ",\n{{\"ph\":\"X\",\"pid\":3,\"tid\":{},\"ts\":", d.track);
        micros(&mut s, d.start);
        s.push_str(",\"dur\":");
        micros(&mut s, d.end.saturating_sub(d.start));
        s.push_str(",\"name\":");
        string(&mut s, &d.name);
        s.push_str(",\"cat\":\"device\"}");
    }
    s
}

/// Consecutive tasks of one stage on one track, not yet written.
#[derive(Clone, Copy)]
struct Run {
    lane: Lane,
    start: u64,
    end: u64,
    tasks: u64,
    flops: f64,
    bytes: f64,
}

/// One track's pending output.
pub(super) struct Track {
    pid: u32,
    tid: usize,
    by_stage: bool,
    buf: String,
    run: Option<Run>,
    /// The current run's stage, and its first task's name (the title when the
    /// run has a single task). Reused from run to run, so a track allocates
    /// only when a name is longer than any before it.
    run_stage: String,
    run_name: String,
}

impl Track {
    pub fn new(pid: u32, tid: usize, by_stage: bool) -> Self {
        Track {
            pid,
            tid,
            by_stage,
            // Room for one more event past the threshold, so the buffer does not
            // reallocate unless a single event is longer than that.
            buf: String::with_capacity(TRACK_BUFFER + 4096),
            run: None,
            run_stage: String::new(),
            run_name: String::new(),
        }
    }

    /// Adds a finished task: one event at task level; at stage level, extends the
    /// current run or writes it and starts a new one.
    pub fn record(
        &mut self,
        lane: Lane,
        name: &str,
        stage: &str,
        cost: Cost,
        start: u64,
        end: u64,
    ) {
        if !self.by_stage {
            let title = Title::Task(name);
            let event = (self.pid, self.tid, lane, stage, title);
            write_event(&mut self.buf, event, start, end, cost, None);
            return;
        }
        if let Some(run) = self.run.as_mut().filter(|_| self.run_stage == stage) {
            run.end = end;
            run.tasks += 1;
            run.flops += cost.flops;
            run.bytes += cost.bytes;
            return;
        }
        self.close_run();
        self.run_stage.clear();
        self.run_stage.push_str(stage);
        self.run_name.clear();
        self.run_name.push_str(name);
        self.run = Some(Run {
            lane,
            start,
            end,
            tasks: 1,
            flops: cost.flops,
            bytes: cost.bytes,
        });
    }

    /// Writes the pending run, if any, into the buffer.
    pub fn close_run(&mut self) {
        if let Some(run) = self.run.take() {
            let title = if run.tasks == 1 {
                Title::Task(&self.run_name)
            } else {
                Title::Merged(&self.run_stage, run.tasks)
            };
            let event = (self.pid, self.tid, run.lane, self.run_stage.as_str(), title);
            let cost = Cost::new(run.flops, run.bytes);
            write_event(
                &mut self.buf,
                event,
                run.start,
                run.end,
                cost,
                Some(run.tasks),
            );
        }
    }

    /// Bytes waiting to be written.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    pub fn bytes(&self) -> &[u8] {
        self.buf.as_bytes()
    }

    pub fn clear(&mut self) {
        self.buf.clear();
    }
}

/// Appends one complete (`X`) event; `(pid, tid, lane, stage, title)` say where
/// and what it is.
fn write_event(
    b: &mut String,
    (pid, tid, lane, stage, title): (u32, usize, Lane, &str, Title<'_>),
    start: u64,
    end: u64,
    cost: Cost,
    tasks: Option<u64>,
) {
    let _ = write!(b, ",\n{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":");
    micros(b, start);
    b.push_str(",\"dur\":");
    micros(b, end.saturating_sub(start));
    b.push_str(",\"name\":");
    title.write(b);
    b.push_str(",\"cat\":");
    string(b, stage);
    b.push_str(",\"args\":{\"stage\":");
    string(b, stage);
    b.push_str(",\"name\":");
    title.write(b);
    let _ = write!(b, ",\"lane\":\"{lane}\",\"flops\":");
    number(b, cost.flops);
    b.push_str(",\"bytes\":");
    number(b, cost.bytes);
    if let Some(k) = tasks {
        let _ = write!(b, ",\"tasks\":{k}");
    }
    b.push_str("}}");
}

/// An event's title: a task's name, or `stage xK` for a merged run.
#[derive(Clone, Copy)]
enum Title<'a> {
    Task(&'a str),
    Merged(&'a str, u64),
}

impl Title<'_> {
    fn write(self, b: &mut String) {
        b.push('"');
        match self {
            Title::Task(name) => escaped(b, name),
            Title::Merged(stage, k) => {
                escaped(b, stage);
                let _ = write!(b, " x{k}");
            }
        }
        b.push('"');
    }
}

/// Nanoseconds as microseconds with three exact decimals (the Chrome unit).
fn micros(b: &mut String, ns: u64) {
    let _ = write!(b, "{}.{:03}", ns / 1000, ns % 1000);
}

/// A JSON number; non-finite values (which JSON cannot hold) become `null`.
fn number(b: &mut String, x: f64) {
    match serde_json::Number::from_f64(x) {
        Some(n) => {
            let _ = write!(b, "{n}");
        }
        None => b.push_str("null"),
    }
}

/// A JSON string.
fn string(b: &mut String, s: &str) {
    b.push('"');
    escaped(b, s);
    b.push('"');
}

/// The body of a JSON string (RFC 8259 section 7: quote, backslash and control
/// characters escaped).
fn escaped(b: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => b.push_str("\\\""),
            '\\' => b.push_str("\\\\"),
            '\n' => b.push_str("\\n"),
            '\r' => b.push_str("\\r"),
            '\t' => b.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(b, "\\u{:04x}", c as u32);
            }
            c => b.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn parse_events(track: &Track) -> Vec<Value> {
        let text = format!("{}{}{}", header(1, 0), track.buf, footer("task", 0));
        let v: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(v["displayTimeUnit"], "ms");
        v["traceEvents"].as_array().unwrap().clone()
    }

    #[test]
    fn names_with_json_specials_round_trip() {
        let mut t = Track::new(1, 0, false);
        let name = "a\"b\\c\nd\u{1}é\u{7f}";
        t.record(
            Lane::Cpu,
            name,
            "st\"age",
            Cost::new(f64::NAN, 3.5),
            1_234_567,
            1_234_999,
        );
        let ev = parse_events(&t);
        let x = ev.last().unwrap();
        assert_eq!(x["name"], name);
        assert_eq!(x["args"]["name"], name);
        assert_eq!(x["args"]["stage"], "st\"age");
        assert!(x["args"]["flops"].is_null());
        assert_eq!(x["args"]["bytes"], 3.5);
        assert_eq!(x["ts"], 1234.567);
        assert_eq!(x["dur"], 0.432);
        assert_eq!(x["args"]["lane"], "cpu");
    }

    #[test]
    fn stage_level_merges_consecutive_same_stage_tasks() {
        let mut t = Track::new(2, 3, true);
        let lane = Lane::Stream(3);
        let name = |i: usize| format!("t{i}");
        // a a a b a: three events, the lone `b` and `a` keep their task names.
        for (i, stage) in ["a", "a", "a", "b", "a"].into_iter().enumerate() {
            let s = 10 * i as u64;
            t.record(lane, &name(i), stage, Cost::new(1.0, 2.0), s, s + 5);
        }
        t.close_run();
        let ev = parse_events(&t);
        let x: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(x.len(), 3);
        assert_eq!(x[0]["name"], "a x3");
        assert_eq!(x[0]["args"]["tasks"], 3);
        assert_eq!(x[0]["args"]["flops"], 3.0);
        assert_eq!(x[0]["args"]["bytes"], 6.0);
        assert_eq!(x[0]["ts"], 0.0);
        assert_eq!(x[0]["dur"], 0.025);
        assert_eq!(x[1]["name"], "t3");
        assert_eq!(x[2]["name"], "t4");
        for e in x {
            assert_eq!(e["pid"], 2);
            assert_eq!(e["tid"], 3);
            assert_eq!(e["args"]["lane"], "stream-3");
        }
    }
}
