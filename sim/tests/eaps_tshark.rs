//! Our EAPS PDUs as Wireshark sees them: every message type, written to a pcap, decoded by
//! `tshark`, whose fields (type, control VLAN, system MAC, sequence numbers, timers, state) must
//! be the ones we emitted and whose EDP checksum status must be "Good".

use spotagg_driver::wire::eaps::{emit_frame, EapsRepr, EapsState, EapsType};
use spotagg_driver::wire::MacAddr;
use std::process::Command;

/// `frames` written to a pcap and decoded by tshark: for each frame, the `fields` tshark gives.
fn tshark_fields(frames: &[Vec<u8>], fields: &[&str]) -> Vec<Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("frames.pcap");
    spotagg_sim::pcap::write_frames(&path, frames).unwrap();
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(&path).args(["-T", "fields", "-E", "separator=/t"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Vec<String>> = text.lines().map(|l| l.split('\t').map(String::from).collect()).collect();
    assert_eq!(lines.len(), frames.len(), "tshark output:\n{text}");
    for line in text.lines() {
        eprintln!("{line}");
    }
    lines
}

#[test]
fn tshark_decodes_our_pdus() {
    if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Tshark) {
        return;
    }
    let pdus: Vec<EapsRepr> = [
        (EapsType::Health, 1000, EapsState::Complete, 1),
        (EapsType::RingUpFlushFdb, 1001, EapsState::Complete, 2),
        (EapsType::RingDownFlushFdb, 4094, EapsState::Failed, 3),
        (EapsType::LinkDown, 7, EapsState::LinksDown, 0),
        (EapsType::Health, 1000, EapsState::Failed, 65535),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(eaps_type, control_vlan, state, hello_seq))| EapsRepr {
        edp_sequence: 0x1000 + i as u16,
        eaps_type,
        control_vlan,
        system_mac: MacAddr([0x02, 0x5a, 0, 0, i as u8, 0x10 + i as u8]),
        hello_timer: 1 + i as u16,
        fail_timer: 3 + 2 * i as u16,
        state,
        hello_seq,
    })
    .collect();
    let frames: Vec<Vec<u8>> = pdus.iter().map(|r| emit_frame(r, r.system_mac, 7)).collect();
    let fields = [
        "vlan.id",
        "llc.extreme_pid",
        "edp.seqno",
        "edp.midmac",
        "edp.checksum.status",
        "edp.tlv.type",
        "edp.eaps.type",
        "edp.eaps.vlanid",
        "edp.eaps.sysmac",
        "edp.eaps.hello",
        "edp.eaps.fail",
        "edp.eaps.state",
        "edp.eaps.helloseq",
    ];
    for (got, r) in tshark_fields(&frames, &fields).iter().zip(&pdus) {
        let want = [
            r.control_vlan.to_string(),
            "0x00bb".to_string(),
            r.edp_sequence.to_string(),
            r.system_mac.to_string(),
            "1".to_string(), // PROTO_CHECKSUM_E_GOOD (0 bad, 2 unverified)
            "11".to_string(),
            u8::from(r.eaps_type).to_string(),
            r.control_vlan.to_string(),
            r.system_mac.to_string(),
            r.hello_timer.to_string(),
            r.fail_timer.to_string(),
            u8::from(r.state).to_string(),
            r.hello_seq.to_string(),
        ];
        assert_eq!(*got, want, "fields {fields:?}");
    }

    // A corrupted checksum is reported bad (status 0): the check above can fail.
    let mut bad = frames[0].clone();
    bad[18 + 13] ^= 0x01;
    assert_eq!(tshark_fields(&[bad], &["edp.checksum.status"]), [["0"]]);
}

/// Our shared-link segment health PDUs (driver::wire::esl) as Wireshark's ESL TLV: control
/// VLAN, system MAC, state, role, link ID and failed link ID as emitted, checksum Good.
#[test]
fn tshark_decodes_our_esl_pdus() {
    use spotagg_driver::wire::esl::{emit_frame, EslRepr, EslRole, EslState};
    if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Tshark) {
        return;
    }
    let pdus: Vec<EslRepr> = [
        (10, EslState::Ready, EslRole::Controller, 34, 0),
        (20, EslState::Blocking, EslRole::Controller, 34, 34),
        (4094, EslState::PreForwarding, EslRole::Partner, 65535, 0),
        (7, EslState::Ready, EslRole::Partner, 1, 1),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(control_vlan, state, role, link_id, failed_link))| EslRepr {
        edp_sequence: 0x2000 + i as u16,
        control_vlan,
        system_mac: MacAddr([0x02, 0x5a, 0, 1, i as u8, 0x20 + i as u8]),
        state,
        role,
        link_id,
        failed_link,
    })
    .collect();
    let frames: Vec<Vec<u8>> = pdus.iter().map(|r| emit_frame(r, r.system_mac, 7)).collect();
    let fields = [
        "vlan.id",
        "edp.seqno",
        "edp.checksum.status",
        "edp.tlv.type",
        "edp.esl.type",
        "edp.esl.vlanid",
        "edp.esl.sysmac",
        "edp.esl.state",
        "edp.esl.role",
        "edp.esl.linkid1",
        "edp.esl.failed1",
        "edp.esl.numlinks",
    ];
    for (got, r) in tshark_fields(&frames, &fields).iter().zip(&pdus) {
        let want = [
            r.control_vlan.to_string(),
            r.edp_sequence.to_string(),
            "1".to_string(),
            "14".to_string(),
            "1".to_string(),
            r.control_vlan.to_string(),
            r.system_mac.to_string(),
            u8::from(r.state).to_string(),
            u8::from(r.role).to_string(),
            r.link_id.to_string(),
            r.failed_link.to_string(),
            "0".to_string(),
        ];
        assert_eq!(*got, want, "fields {fields:?}");
    }
}
