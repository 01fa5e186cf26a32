//! pcap files of Ethernet frames (link type 1, no FCS), for `spotagg replay` and for the tests
//! that compare engines on recorded traces.
//!
//! Reading accepts both byte orders and both timestamp resolutions of the classic pcap format
//! and refuses any link type but Ethernet. Writing uses the native byte order, a 65535-byte
//! snap length and the timestamp resolution the caller asks for (that of the input when
//! replaying, so timestamps survive unchanged). Every error names the file.

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One captured frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapFrame {
    /// Capture time since the epoch.
    pub timestamp: Duration,
    /// The frame as captured (Ethernet header first, no FCS).
    pub data: Vec<u8>,
}

/// The frames of a pcap file and its timestamp resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapFile {
    /// Microsecond or nanosecond timestamps.
    pub resolution: TsResolution,
    /// The frames, in file order.
    pub frames: Vec<PcapFrame>,
}

/// A pcap file that could not be read or written. The message names the file.
#[derive(Debug, thiserror::Error)]
pub enum PcapIoError {
    /// The file could not be opened, created or written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause (kept out of the error chain: the message already has it).
        error: std::io::Error,
    },
    /// The file is not a readable classic pcap (pcapng is not read), or a record is damaged.
    #[error("{}: not a readable pcap file ({error})", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// The cause (kept out of the error chain: the message already has it).
        error: pcap_file::PcapError,
    },
    /// The link type is not Ethernet.
    #[error("{}: link type {code} ({link:?}) is not Ethernet (1): only Ethernet frames without FCS can be replayed", path.display())]
    LinkType {
        /// The file.
        path: PathBuf,
        /// The link type found.
        link: DataLink,
        /// Its number.
        code: u32,
    },
}

/// Reads every frame of an Ethernet pcap file.
pub fn read_pcap(path: &Path) -> Result<PcapFile, PcapIoError> {
    let file = File::open(path).map_err(|error| PcapIoError::Io { path: path.into(), error })?;
    let mut reader =
        PcapReader::new(BufReader::new(file)).map_err(|error| PcapIoError::Format { path: path.into(), error })?;
    let header = reader.header();
    if header.datalink != DataLink::ETHERNET {
        return Err(PcapIoError::LinkType { path: path.into(), link: header.datalink, code: header.datalink.into() });
    }
    let mut frames = Vec::new();
    while let Some(packet) = reader.next_packet() {
        let packet = packet.map_err(|error| PcapIoError::Format { path: path.into(), error })?;
        frames.push(PcapFrame { timestamp: packet.timestamp, data: packet.data.into_owned() });
    }
    Ok(PcapFile { resolution: header.ts_resolution, frames })
}

/// Writes Ethernet frames to a pcap file as they come.
pub struct PcapFrameWriter {
    path: PathBuf,
    writer: PcapWriter<BufWriter<File>>,
}

impl PcapFrameWriter {
    /// Creates (or truncates) `path` and writes the file header.
    pub fn create(path: &Path, resolution: TsResolution) -> Result<PcapFrameWriter, PcapIoError> {
        let file = File::create(path).map_err(|error| PcapIoError::Io { path: path.into(), error })?;
        let header = PcapHeader {
            datalink: DataLink::ETHERNET,
            ts_resolution: resolution,
            endianness: Endianness::native(),
            ..PcapHeader::default()
        };
        let writer = PcapWriter::with_header(BufWriter::new(file), header).map_err(|e| Self::error(path, e))?;
        Ok(PcapFrameWriter { path: path.into(), writer })
    }

    fn error(path: &Path, e: pcap_file::PcapError) -> PcapIoError {
        match e {
            pcap_file::PcapError::IoError(error) => PcapIoError::Io { path: path.into(), error },
            error => PcapIoError::Format { path: path.into(), error },
        }
    }

    /// Appends one frame.
    pub fn write(&mut self, timestamp: Duration, frame: &[u8]) -> Result<(), PcapIoError> {
        let packet = PcapPacket::new(timestamp, frame.len() as u32, frame);
        self.writer.write_packet(&packet).map_err(|e| Self::error(&self.path, e))?;
        Ok(())
    }

    /// Flushes the file.
    pub fn finish(self) -> Result<(), PcapIoError> {
        use std::io::Write;
        let path = self.path;
        self.writer.into_writer().flush().map_err(|error| PcapIoError::Io { path, error })
    }
}

/// Writes frames to a pcap file with timestamps 1 µs apart from the epoch (for generated traces).
pub fn write_frames(path: &Path, frames: &[Vec<u8>]) -> Result<(), PcapIoError> {
    let mut w = PcapFrameWriter::create(path, TsResolution::MicroSecond)?;
    for (i, f) in frames.iter().enumerate() {
        w.write(Duration::from_micros(i as u64), f)?;
    }
    w.finish()
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn round_trip_and_errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("spotagg-pcap-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.pcap");
        let frames = vec![vec![1u8; 60], vec![2u8; 14], vec![]];
        write_frames(&path, &frames).unwrap();
        let back = read_pcap(&path).unwrap();
        assert_eq!(back.resolution, TsResolution::MicroSecond);
        assert_eq!(back.frames.iter().map(|f| f.data.clone()).collect::<Vec<_>>(), frames);
        assert_eq!(back.frames[2].timestamp, Duration::from_micros(2));

        // Nanosecond timestamps survive.
        let ns = dir.join("ns.pcap");
        let mut w = PcapFrameWriter::create(&ns, TsResolution::NanoSecond).unwrap();
        w.write(Duration::new(1_700_000_000, 123_456_789), &[0xab; 42]).unwrap();
        w.finish().unwrap();
        let back = read_pcap(&ns).unwrap();
        assert_eq!(back.frames[0].timestamp, Duration::new(1_700_000_000, 123_456_789));

        // A raw-IP pcap (link type 101) is refused, naming the file and the link type.
        let raw = dir.join("raw.pcap");
        let header = PcapHeader { datalink: DataLink::RAW, ..PcapHeader::default() };
        let mut w = PcapWriter::with_header(File::create(&raw).unwrap(), header).unwrap();
        w.write_packet(&PcapPacket::new(Duration::ZERO, 20, &[0x45; 20])).unwrap();
        drop(w);
        let e = read_pcap(&raw).unwrap_err().to_string();
        assert!(e.contains("raw.pcap") && e.contains("101") && e.contains("RAW"), "{e}");

        let e = read_pcap(&dir.join("missing.pcap")).unwrap_err().to_string();
        assert!(e.contains("missing.pcap"), "{e}");
        std::fs::write(dir.join("junk.pcap"), b"not a pcap at all").unwrap();
        let e = read_pcap(&dir.join("junk.pcap")).unwrap_err().to_string();
        assert!(e.contains("junk.pcap") && e.contains("not a readable pcap"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
