package devpostgres

import (
	"net"
	"path/filepath"
	"testing"
)

func TestChoosePort(t *testing.T) {
	t.Parallel()
	busy := listen(t, 0)
	defer busy.Close()
	taken := busy.Addr().(*net.TCPAddr).Port
	free, err := freePort()
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		explicit   int
		remembered int // 0: no port file
		want       int // 0: any port but the busy one and 5432
		wantErr    bool
	}{
		{name: "explicit free port is used", explicit: free, want: free},
		{name: "explicit busy port fails", explicit: taken, wantErr: true},
		{name: "remembered free port is reused", remembered: free, want: free},
		{name: "remembered busy port is replaced", remembered: taken},
		{name: "remembered 5432 is replaced", remembered: systemPort},
		{name: "no port file", remembered: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			portFile := filepath.Join(t.TempDir(), "port")
			if tt.remembered != 0 {
				if err := writePort(portFile, tt.remembered); err != nil {
					t.Fatal(err)
				}
			}
			got, err := choosePort(tt.explicit, portFile)
			if (err != nil) != tt.wantErr {
				t.Fatalf("choosePort() err = %v, wantErr %v", err, tt.wantErr)
			}
			switch {
			case tt.wantErr:
			case tt.want != 0 && got != tt.want:
				t.Errorf("choosePort() = %d, want %d", got, tt.want)
			case tt.want == 0 && (got == taken || got == systemPort || got == 0):
				t.Errorf("choosePort() = %d, want a free port other than %d and %d", got, taken, systemPort)
			}
		})
	}
}
