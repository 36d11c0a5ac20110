/* Bare-metal start for a Cortex-M4 with an FPU (QEMU's mps2-an386 board, or a real one with the
 * same memory map): the vector table, a reset handler that enables the FPU, zeroes .bss and
 * calls main, and ARM semihosting for output and the exit status. Link with mps2-an386.ld and
 * -nostartfiles.
 *
 * With -DTFC_NEWLIB_STDIO, main may use newlib's stdio (printf): link with
 * --specs=rdimon.specs (librdimon: stdio and the heap over semihosting; its _sbrk grows the
 * heap from the linker script's `end`); the reset handler opens the semihosting handles
 * (initialise_monitor_handles) before main and flushes stdout after it. */
#include <stdint.h>
#ifdef TFC_NEWLIB_STDIO
#include <stdio.h>
void initialise_monitor_handles(void);
#endif

extern uint32_t __bss_start__, __bss_end__, __stack_top__;
int main(void);
void tfc_semihosting_write0(const char *text);
void Reset_Handler(void);

static int semihosting(int op, void *arg) {
    register int r0 __asm__("r0") = op;
    register void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

/* SYS_WRITE0: a NUL-terminated string to the debug console (QEMU: its stdout) */
void tfc_semihosting_write0(const char *text) { semihosting(0x04, (void *)(uintptr_t)text); }

/* SYS_EXIT_EXTENDED: ADP_Stopped_ApplicationExit with the status (QEMU exits with it) */
static void semihosting_exit(int status) {
    uint32_t block[2] = {0x20026u, (uint32_t)status};
    semihosting(0x20, block);
    for (;;) {
    }
}

static void Default_Handler(void) { semihosting_exit(99); }

void Reset_Handler(void) {
    /* CPACR: full access to the coprocessors CP10 and CP11, the FPU */
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    for (uint32_t *p = &__bss_start__; p < &__bss_end__; ++p) *p = 0;
#ifdef TFC_NEWLIB_STDIO
    initialise_monitor_handles();
    int status = main();
    fflush(stdout);
    semihosting_exit(status);
#else
    semihosting_exit(main());
#endif
}

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)&__stack_top__, /* the initial stack pointer */
    Reset_Handler,
    Default_Handler, Default_Handler, Default_Handler, Default_Handler, Default_Handler,
    0, 0, 0, 0,
    Default_Handler, Default_Handler, 0, Default_Handler, Default_Handler,
};
