/* sandbox_run: load seccomp filters like systemd builds them from a unit, then exec a command.
 * A helper of tests/deploy/test_sandbox.py, compiled by it (needs gcc and libseccomp-dev).
 *
 *   sandbox_run RULES -- command args...
 * RULES lines: "allow NAME" (an allow-list: every other system call fails with EPERM, as with
 * SystemCallErrorNumber=EPERM), "mdwe" (what MemoryDenyWriteExecute=yes forbids: mmap of
 * writable+executable memory, mprotect/pkey_mprotect adding PROT_EXEC, shmat with SHM_EXEC),
 * "families N ..." (socket() of any other address family fails with EAFNOSUPPORT, as with
 * RestrictAddressFamilies=).
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

static void die(const char *what, int rc) {
    fprintf(stderr, "sandbox_run: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
    exit(125);
}

int main(int argc, char **argv) {
    if (argc < 4 || strcmp(argv[2], "--") != 0) {
        fprintf(stderr, "usage: sandbox_run RULES -- command args...\n");
        return 125;
    }
    FILE *rules = fopen(argv[1], "r");
    if (!rules) die(argv[1], errno);
    scmp_filter_ctx allow = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    scmp_filter_ctx extra = seccomp_init(SCMP_ACT_ALLOW);
    if (!allow || !extra) die("seccomp_init", ENOMEM);
    char line[256];
    int rc;
    while (fgets(line, sizeof line, rules)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "allow ", 6) == 0) {
            int nr = seccomp_syscall_resolve_name(line + 6);
            if (nr == __NR_SCMP_ERROR) continue; /* not a syscall of this architecture */
            if ((rc = seccomp_rule_add(allow, SCMP_ACT_ALLOW, nr, 0)) < 0) die(line, rc);
        } else if (strcmp(line, "mdwe") == 0) {
            if ((rc = seccomp_rule_add(extra, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mmap), 1,
                     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC | PROT_WRITE, PROT_EXEC | PROT_WRITE))) < 0)
                die("mdwe mmap", rc);
            if ((rc = seccomp_rule_add(extra, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mprotect), 1,
                     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC))) < 0)
                die("mdwe mprotect", rc);
            if ((rc = seccomp_rule_add(extra, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(pkey_mprotect), 1,
                     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC))) < 0)
                die("mdwe pkey_mprotect", rc);
            if ((rc = seccomp_rule_add(extra, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(shmat), 1,
                     SCMP_A2(SCMP_CMP_MASKED_EQ, SHM_EXEC, SHM_EXEC))) < 0)
                die("mdwe shmat", rc);
        } else if (strncmp(line, "families ", 9) == 0) {
            int ok[64] = {0};
            char *save = NULL;
            for (char *tok = strtok_r(line + 9, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                int fam = atoi(tok);
                if (fam >= 0 && fam < 64) ok[fam] = 1;
            }
            for (int fam = 0; fam < 64; fam++) {
                if (ok[fam]) continue;
                if ((rc = seccomp_rule_add(extra, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                         SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fam))) < 0)
                    die("families", rc);
            }
        }
    }
    fclose(rules);
    if ((rc = seccomp_load(extra)) < 0) die("seccomp_load", rc);
    if ((rc = seccomp_load(allow)) < 0) die("seccomp_load", rc);
    execvp(argv[3], argv + 3);
    die(argv[3], errno);
    return 125;
}
