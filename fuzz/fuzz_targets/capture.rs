//! The streaming pcap / pcapng reader over arbitrary bytes, every record until an error or
//! the end, then the inspector (table and JSON) over the same bytes. Nothing may panic;
//! offsets only grow; each packet's bytes come from the input.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rocelab::capture::CaptureReader;
use rocelab::inspect::{self, Output};

fuzz_target!(|data: &[u8]| {
    if let Ok(mut reader) = CaptureReader::new(data) {
        let _ = reader.format();
        let mut last = reader.offset();
        let mut records = 0u64;
        loop {
            match reader.next_packet() {
                Ok(Some(p)) => {
                    assert!(p.data.len() <= data.len(), "a packet larger than the file");
                    assert!(
                        p.offset < data.len() as u64,
                        "a packet past the end of the file"
                    );
                    let _ = (p.ts, p.orig_len, p.interface, p.comment);
                }
                Ok(None) | Err(_) => break,
            }
            let now = reader.offset();
            assert!(now > last, "the reader did not advance ({last} -> {now})");
            last = now;
            records += 1;
            assert!(records <= data.len() as u64, "more records than bytes");
        }
        let _ = reader.skipped_non_ethernet();
        let _ = reader.interfaces();
    }
    let _ = inspect::run(data, &mut std::io::sink(), Output::Table);
    let _ = inspect::run(data, &mut std::io::sink(), Output::Json);
});
