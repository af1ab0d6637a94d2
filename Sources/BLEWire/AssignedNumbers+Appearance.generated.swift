// GENERATED FILE - DO NOT EDIT.
// Regenerate with: python3 scripts/generate-assigned-numbers.py DATA_DIR
//
// Data: Bluetooth assigned numbers (service, characteristic and descriptor UUIDs, company
// identifiers, appearance values) from the Bluetooth numbers database.
// Source: NordicSemiconductor/bluetooth-numbers-database, v1/ at commit 5387e83bccbf748c2df2c9f897e2260405832688
//
// The data is distributed under the following licence, reproduced as it requires:
//
// Copyright (c) 2019 - 2020, Nordic Semiconductor ASA
// All rights reserved.
//
// Redistribution and use in source and binary forms, with or without modification, are permitted provided that the following conditions are met:
//
// 1. Redistributions of source code must retain the above copyright notice, this list of conditions and the following disclaimer.
//
// 2. Redistributions in binary form must reproduce the above copyright notice, this list of conditions and the following disclaimer in the documentation and/or other materials provided with the distribution.
//
// 3. Neither the name of Nordic Semiconductor ASA nor the names of its contributors may be used to endorse or promote products derived from this software without specific prior written permission.
//
// THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY, AND FITNESS FOR A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL NORDIC SEMICONDUCTOR ASA OR CONTRIBUTORS BELIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.

extension AssignedNumbers {
    /// Appearance categories (value >> 6, hex), tab, name. 52 entries.
    static let appearanceCategoryTable: String = #"""
000	Unknown
001	Phone
002	Computer
003	Watch
004	Clock
005	Display
006	Remote Control
007	Eye-glasses
008	Tag
009	Keyring
00A	Media Player
00B	Barcode Scanner
00C	Thermometer
00D	Heart Rate Sensor
00E	Blood Pressure
00F	Human Interface Device
010	Glucose Meter
011	Running Walking Sensor
012	Cycling
013	Control Device
014	Network Device
015	Sensor
016	Light Fixtures
017	Fan
018	HVAC
019	Air Conditioning
01A	Humidifier
01B	Heating
01C	Access Control
01D	Motorized Device
01E	Power Device
01F	Light Source
020	Window Covering
021	Audio Sink
022	Audio Source
023	Motorized Vehicle
024	Domestic Appliance
025	Wearable Audio Device
026	Aircraft
027	AV Equipment
028	Display Equipment
029	Hearing aid
02A	Gaming
02B	Signage
031	Pulse Oximeter
032	Weight Scale
033	Personal Mobility Device
034	Continuous Glucose Monitor
035	Insulin Pump
036	Medication Delivery
037	Spirometer
051	Outdoor Sports Activity
"""#

    /// Appearance subcategories (full 16-bit value, hex), tab, name. 250 entries.
    static let appearanceSubcategoryTable: String = #"""
0081	Desktop Workstation
0082	Server-class Computer
0083	Laptop
0084	Handheld PC/PDA (clamshell)
0085	Palm-size PC/PDA
0086	Wearable computer (watch size)
0087	Tablet
0088	Docking Station
0089	All in One
008A	Blade Server
008B	Convertible
008C	Detachable
008D	IoT Gateway
008E	Mini PC
008F	Stick PC
00C1	Sports Watch
00C2	Smartwatch
0301	Ear Thermometer
0341	Heart Rate Belt
0381	Arm Blood Pressure
0382	Wrist Blood Pressure
03C1	Keyboard
03C2	Mouse
03C3	Joystick
03C4	Gamepad
03C5	Digitizer Tablet
03C6	Card Reader
03C7	Digital Pen
03C8	Barcode Scanner
03C9	Touchpad
03CA	Presentation Remote
0441	In-Shoe Running Walking Sensor
0442	On-Shoe Running Walking Sensor
0443	On-Hip Running Walking Sensor
0481	Cycling Computer
0482	Speed Sensor
0483	Cadence Sensor
0484	Power Sensor
0485	Speed and Cadence Sensor
04C1	Switch
04C2	Multi-switch
04C3	Button
04C4	Slider
04C5	Rotary Switch
04C6	Touch Panel
04C7	Single Switch
04C8	Double Switch
04C9	Triple Switch
04CA	Battery Switch
04CB	Energy Harvesting Switch
04CC	Push Button
04CD	Dial
0501	Access Point
0502	Mesh Device
0503	Mesh Network Proxy
0541	Motion Sensor
0542	Air quality Sensor
0543	Temperature Sensor
0544	Humidity Sensor
0545	Leak Sensor
0546	Smoke Sensor
0547	Occupancy Sensor
0548	Contact Sensor
0549	Carbon Monoxide Sensor
054A	Carbon Dioxide Sensor
054B	Ambient Light Sensor
054C	Energy Sensor
054D	Color Light Sensor
054E	Rain Sensor
054F	Fire Sensor
0550	Wind Sensor
0551	Proximity Sensor
0552	Multi-Sensor
0553	Flush Mounted Sensor
0554	Ceiling Mounted Sensor
0555	Wall Mounted Sensor
0556	Multisensor
0557	Energy Meter
0558	Flame Detector
0559	Vehicle Tire Pressure Sensor
0581	Wall Light
0582	Ceiling Light
0583	Floor Light
0584	Cabinet Light
0585	Desk Light
0586	Troffer Light
0587	Pendant Light
0588	In-ground Light
0589	Flood Light
058A	Underwater Light
058B	Bollard with Light
058C	Pathway Light
058D	Garden Light
058E	Pole-top Light
058F	Spotlight
0590	Linear Light
0591	Street Light
0592	Shelves Light
0593	Bay Light
0594	Emergency Exit Light
0595	Light Controller
0596	Light Driver
0597	Bulb
0598	Low-bay Light
0599	High-bay Light
05C1	Ceiling Fan
05C2	Axial Fan
05C3	Exhaust Fan
05C4	Pedestal Fan
05C5	Desk Fan
05C6	Wall Fan
0601	Thermostat
0602	Humidifier
0603	De-humidifier
0604	Heater
0605	Radiator
0606	Boiler
0607	Heat Pump
0608	Infrared Heater
0609	Radiant Panel Heater
060A	Fan Heater
060B	Air Curtain
06C1	Radiator
06C2	Boiler
06C3	Heat Pump
06C4	Infrared Heater
06C5	Radiant Panel Heater
06C6	Fan Heater
06C7	Air Curtain
0701	Access Door
0702	Garage Door
0703	Emergency Exit Door
0704	Access Lock
0705	Elevator
0706	Window
0707	Entrance Gate
0708	Door Lock
0709	Locker
0741	Motorized Gate
0742	Awning
0743	Blinds or Shades
0744	Curtains
0745	Screen
0781	Power Outlet
0782	Power Strip
0783	Plug
0784	Power Supply
0785	LED Driver
0786	Fluorescent Lamp Gear
0787	HID Lamp Gear
0788	Charge Case
0789	Power Bank
07C1	Incandescent Light Bulb
07C2	LED Lamp
07C3	HID Lamp
07C4	Fluorescent Lamp
07C5	LED Array
07C6	Multi-Color LED Array
07C7	Low voltage halogen
07C8	Organic light emitting diode (OLED)
0801	Window Shades
0802	Window Blinds
0803	Window Awning
0804	Window Curtain
0805	Exterior Shutter
0806	Exterior Screen
0841	Standalone Speaker
0842	Soundbar
0843	Bookshelf Speaker
0844	Standmounted Speaker
0845	Speakerphone
0881	Microphone
0882	Alarm
0883	Bell
0884	Horn
0885	Broadcasting Device
0886	Service Desk
0887	Kiosk
0888	Broadcasting Room
0889	Auditorium
08C1	Car
08C2	Large Goods Vehicle
08C3	2-Wheeled Vehicle
08C4	Motorbike
08C5	Scooter
08C6	Moped
08C7	3-Wheeled Vehicle
08C8	Light Vehicle
08C9	Quad Bike
08CA	Minibus
08CB	Bus
08CC	Trolley
08CD	Agricultural Vehicle
08CE	Camper / Caravan
08CF	Recreational Vehicle / Motor Home
0901	Refrigerator
0902	Freezer
0903	Oven
0904	Microwave
0905	Toaster
0906	Washing Machine
0907	Dryer
0908	Coffee maker
0909	Clothes iron
090A	Curling iron
090B	Hair dryer
090C	Vacuum cleaner
090D	Robotic vacuum cleaner
090E	Rice cooker
090F	Clothes steamer
0941	Earbud
0942	Headset
0943	Headphones
0944	Neck Band
0981	Light Aircraft
0982	Microlight
0983	Paraglider
0984	Large Passenger Aircraft
09C1	Amplifier
09C2	Receiver
09C3	Radio
09C4	Tuner
09C5	Turntable
09C6	CD Player
09C7	DVD Player
09C8	Bluray Player
09C9	Optical Disc Player
09CA	Set-Top Box
0A01	Television
0A02	Monitor
0A03	Projector
0A41	In-ear hearing aid
0A42	Behind-ear hearing aid
0A43	Cochlear Implant
0A81	Home Video Game Console
0A82	Portable handheld console
0AC1	Digital Signage
0AC2	Electronic Label
0C41	Fingertip Pulse Oximeter
0C42	Wrist Worn Pulse Oximeter
0CC1	Powered Wheelchair
0CC2	Mobility Scooter
0D41	Insulin Pump, durable pump
0D44	Insulin Pump, patch pump
0D48	Insulin Pen
0DC1	Handheld Spirometer
1441	Location Display
1442	Location and Navigation Display
1443	Location Pod
1444	Location and Navigation Pod
"""#
}
