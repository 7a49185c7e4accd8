package testproc

// sysClone3 is clone3's number, the same on amd64 and arm64.
const sysClone3 = 435
