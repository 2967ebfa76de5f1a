//! The system-call filter every isolated bot and build runs under: a classic BPF
//! program that bubblewrap installs (`--seccomp FD`) just before it starts the
//! bot, in the spirit of the container runtimes' default profiles.
//!
//! A deny list rather than an allow list, because bots are written in any language
//! and their runtimes call what they call; what it denies is what would let one
//! sandbox reach another or the kernel's wider surface:
//! - other processes' memory and state: `ptrace`, `process_vm_readv`/`writev`,
//!   `kcmp`, `pidfd_getfd`;
//! - the machine's mounts, namespaces and kernel: `mount` and the new mount API,
//!   `unshare`, `setns`, `clone` with a namespace flag (`clone3`, whose flags a
//!   filter cannot read, answers "not implemented" so that libc falls back to
//!   `clone`), `bpf`, `perf_event_open`, `keyctl` and the key calls, `userfaultfd`,
//!   modules, `kexec`, `reboot`, swap, `acct`, `syslog`, file handles;
//! - `io_uring`, whose operations bypass this filter;
//! - sockets of any family but IPv4 and IPv6 (which reach only the sandbox's own
//!   loopback): no Unix socket can be made, so no socket file the host has —
//!   a database's, a daemon's — can be connected to, even one in a folder the bot
//!   is shown. `socketpair` (a connected pair, reaching nothing) stays.
//!
//! A refused call fails with an error in the bot (`EPERM`, `EAFNOSUPPORT`,
//! `ENOSYS`): it costs the bot what it wanted, never the referee. A call of another
//! architecture's calling convention (x32, 32-bit) kills the process.

use nix::libc;

/// One instruction of a classic BPF program (`struct sock_filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Op {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;

/// Offsets into `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low 32 bits of the first argument (little-endian machines only).
const ARG0_LOW: u32 = 16;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;

/// x32 calls on x86_64 carry this bit in their number.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// The namespace flags of `clone` (`CLONE_NEWTIME` is a signal number's bit there).
const CLONE_NAMESPACES: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;

/// Calls that fail with `EPERM`, on every architecture.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    libc::SYS_pidfd_getfd,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_userfaultfd,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_syslog,
    libc::SYS_quotactl,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_fanotify_init,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_vhangup,
];

/// x86's own: port I/O.
#[cfg(target_arch = "x86_64")]
const DENIED_HERE: &[libc::c_long] = &[libc::SYS_iopl, libc::SYS_ioperm, libc::SYS_lookup_dcookie];
#[cfg(target_arch = "aarch64")]
const DENIED_HERE: &[libc::c_long] = &[libc::SYS_lookup_dcookie];

/// A program with jumps to labels, resolved when it is finished.
struct Asm {
    ops: Vec<Op>,
    /// (instruction, label, whether the true branch) still to resolve.
    fixups: Vec<(usize, Label, bool)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
    Deny,
    Kill,
    NoSys,
    Socket,
    Clone,
}

impl Asm {
    fn load(&mut self, offset: u32) {
        self.ops.push(Op {
            code: LD_W_ABS,
            jt: 0,
            jf: 0,
            k: offset,
        });
    }

    /// If the accumulator `code`s `k`, go to `to`, else on.
    fn jump_if(&mut self, code: u16, k: u32, to: Label) {
        self.fixups.push((self.ops.len(), to, true));
        self.ops.push(Op {
            code,
            jt: 0,
            jf: 0,
            k,
        });
    }

    /// Unless the accumulator equals `k`, go to `to`.
    fn jump_unless(&mut self, k: u32, to: Label) {
        self.fixups.push((self.ops.len(), to, false));
        self.ops.push(Op {
            code: JEQ_K,
            jt: 0,
            jf: 0,
            k,
        });
    }

    fn ret(&mut self, k: u32) {
        self.ops.push(Op {
            code: RET_K,
            jt: 0,
            jf: 0,
            k,
        });
    }

    fn finish(mut self, labels: &[(Label, usize)]) -> Vec<Op> {
        for (at, label, on_true) in std::mem::take(&mut self.fixups) {
            let target = labels
                .iter()
                .find(|(l, _)| *l == label)
                .map(|&(_, i)| i)
                .expect("every label is placed");
            let offset = u8::try_from(target - at - 1).expect("the filter's jumps are short");
            if on_true {
                self.ops[at].jt = offset;
            } else {
                self.ops[at].jf = offset;
            }
        }
        self.ops
    }
}

/// The filter as the instructions bubblewrap reads (`struct sock_filter`s in
/// the machine's byte order).
pub fn program() -> Vec<u8> {
    let ops = assemble();
    let mut bytes = Vec::with_capacity(ops.len() * 8);
    for op in ops {
        bytes.extend_from_slice(&op.code.to_ne_bytes());
        bytes.push(op.jt);
        bytes.push(op.jf);
        bytes.extend_from_slice(&op.k.to_ne_bytes());
    }
    bytes
}

fn assemble() -> Vec<Op> {
    let mut a = Asm {
        ops: Vec::new(),
        fixups: Vec::new(),
    };
    a.load(ARCH);
    a.jump_unless(AUDIT_ARCH, Label::Kill);
    a.load(NR);
    #[cfg(target_arch = "x86_64")]
    a.jump_if(JGE_K, X32_SYSCALL_BIT, Label::Kill);
    for &nr in DENIED.iter().chain(DENIED_HERE) {
        a.jump_if(JEQ_K, nr as u32, Label::Deny);
    }
    a.jump_if(JEQ_K, libc::SYS_clone3 as u32, Label::NoSys);
    a.jump_if(JEQ_K, libc::SYS_socket as u32, Label::Socket);
    a.jump_if(JEQ_K, libc::SYS_clone as u32, Label::Clone);
    a.ret(RET_ALLOW);
    let socket = a.ops.len();
    a.load(ARG0_LOW);
    a.ops.push(Op {
        code: JEQ_K,
        jt: 1,
        jf: 0,
        k: libc::AF_INET as u32,
    });
    a.ops.push(Op {
        code: JEQ_K,
        jt: 0,
        jf: 1,
        k: libc::AF_INET6 as u32,
    });
    a.ret(RET_ALLOW);
    a.ret(RET_ERRNO | libc::EAFNOSUPPORT as u32);
    let clone = a.ops.len();
    a.load(ARG0_LOW);
    a.jump_if(JSET_K, CLONE_NAMESPACES, Label::Deny);
    a.ret(RET_ALLOW);
    let deny = a.ops.len();
    a.ret(RET_ERRNO | libc::EPERM as u32);
    let nosys = a.ops.len();
    a.ret(RET_ERRNO | libc::ENOSYS as u32);
    let kill = a.ops.len();
    a.ret(RET_KILL_PROCESS);
    a.finish(&[
        (Label::Socket, socket),
        (Label::Clone, clone),
        (Label::Deny, deny),
        (Label::NoSys, nosys),
        (Label::Kill, kill),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program on one call as the kernel would: what it returns.
    fn run(ops: &[Op], arch: u32, nr: u32, arg0: u32) -> u32 {
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let op = ops[pc];
            match op.code {
                LD_W_ABS => {
                    acc = match op.k {
                        ARCH => arch,
                        NR => nr,
                        ARG0_LOW => arg0,
                        other => panic!("load of offset {other}"),
                    };
                    pc += 1;
                }
                RET_K => return op.k,
                code => {
                    let taken = match code {
                        JEQ_K => acc == op.k,
                        JGE_K => acc >= op.k,
                        JSET_K => acc & op.k != 0,
                        other => panic!("opcode {other:#x}"),
                    };
                    pc += 1 + usize::from(if taken { op.jt } else { op.jf });
                }
            }
        }
    }

    fn call(nr: libc::c_long, arg0: u32) -> u32 {
        run(&assemble(), AUDIT_ARCH, nr as u32, arg0)
    }

    #[test]
    fn the_filter_refuses_what_reaches_other_sandboxes_and_allows_the_rest() {
        let eperm = RET_ERRNO | libc::EPERM as u32;
        for nr in [
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
            libc::SYS_mount,
            libc::SYS_bpf,
            libc::SYS_perf_event_open,
            libc::SYS_keyctl,
            libc::SYS_userfaultfd,
            libc::SYS_init_module,
            libc::SYS_finit_module,
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_io_uring_setup,
        ] {
            assert_eq!(call(nr, 0), eperm, "call {nr}");
        }
        for nr in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_openat,
            libc::SYS_mmap,
            libc::SYS_exit_group,
            libc::SYS_socketpair,
            libc::SYS_connect,
            libc::SYS_setresuid,
            libc::SYS_prctl,
        ] {
            assert_eq!(call(nr, 0), RET_ALLOW, "call {nr}");
        }
        // Sockets: the sandbox's own network, never a Unix socket or a raw one.
        let refused_family = RET_ERRNO | libc::EAFNOSUPPORT as u32;
        assert_eq!(call(libc::SYS_socket, libc::AF_INET as u32), RET_ALLOW);
        assert_eq!(call(libc::SYS_socket, libc::AF_INET6 as u32), RET_ALLOW);
        for family in [libc::AF_UNIX, libc::AF_NETLINK, libc::AF_PACKET, libc::AF_VSOCK] {
            assert_eq!(
                call(libc::SYS_socket, family as u32),
                refused_family,
                "family {family}"
            );
        }
        // Threads and forks, but no new namespace of any kind.
        let thread = (libc::CLONE_VM | libc::CLONE_FS | libc::CLONE_FILES | libc::CLONE_THREAD) as u32;
        assert_eq!(call(libc::SYS_clone, thread), RET_ALLOW);
        assert_eq!(call(libc::SYS_clone, libc::SIGCHLD as u32), RET_ALLOW);
        assert_eq!(call(libc::SYS_clone, libc::CLONE_NEWUSER as u32 | 17), eperm);
        assert_eq!(call(libc::SYS_clone, libc::CLONE_NEWNS as u32), eperm);
        assert_eq!(
            call(libc::SYS_clone3, 0),
            RET_ERRNO | libc::ENOSYS as u32,
            "clone3's flags are out of a filter's reach"
        );
        // Another architecture's calls kill.
        let ops = assemble();
        assert_eq!(run(&ops, 0x4000_0003, libc::SYS_read as u32, 0), RET_KILL_PROCESS);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            run(&ops, AUDIT_ARCH, X32_SYSCALL_BIT | libc::SYS_read as u32, 0),
            RET_KILL_PROCESS
        );
        assert_eq!(program().len(), ops.len() * 8);
    }
}
