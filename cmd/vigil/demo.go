package main

func runDemo(args []string) error { return usageError("demo: not built yet") }
