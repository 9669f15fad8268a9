/* Preloaded (LD_PRELOAD) into the sanitizer pass of .ci/run: dlclose keeps every library
   loaded. Open MPI unloads its components at MPI_Finalize, after which LeakSanitizer can only
   say "<unknown module>" for the allocations they keep; loaded, they have names, and
   .ci/lsan.supp suppresses exactly Open MPI's libraries and components. */
int dlclose(void *handle) {
  (void)handle;
  return 0;
}
